package rules

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestActionExpired: an entry is pruned once At + Retain is before the
// store's clock, not at that very instant.
func TestActionExpired(t *testing.T) {
	at := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	a := slotstore.Action{At: at, Retain: time.Hour}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{{at, false}, {at.Add(time.Hour), false}, {at.Add(time.Hour + time.Nanosecond), true}} {
		if got := ActionExpired(a, c.now); got != c.want {
			t.Errorf("expired at %s: %v, want %v", c.now.Format(time.RFC3339Nano), got, c.want)
		}
	}
}

// TestActionListed: each filter alone, Before exclusive, Since inclusive.
func TestActionListed(t *testing.T) {
	at := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	a := slotstore.Action{Seq: 7, At: at, Who: "alice", Kind: "pause", Target: "a"}
	for _, c := range []struct {
		p    slotstore.ActionsParams
		want bool
	}{
		{slotstore.ActionsParams{}, true},
		{slotstore.ActionsParams{Before: 8}, true},
		{slotstore.ActionsParams{Before: 7}, false},
		{slotstore.ActionsParams{Who: "alice", Kind: "pause", Target: "a"}, true},
		{slotstore.ActionsParams{Who: "alic"}, false},
		{slotstore.ActionsParams{Kind: "resume"}, false},
		{slotstore.ActionsParams{Target: "b"}, false},
		{slotstore.ActionsParams{Since: at}, true},
		{slotstore.ActionsParams{Since: at.Add(time.Nanosecond)}, false},
	} {
		if got := ActionListed(a, c.p); got != c.want {
			t.Errorf("listed by %+v: %v, want %v", c.p, got, c.want)
		}
	}
}

// TestNormalizeActions: the limit defaults to 100 and is bounded; Before
// is not negative.
func TestNormalizeActions(t *testing.T) {
	p, err := NormalizeActions(slotstore.ActionsParams{})
	if err != nil || p.Limit != DefaultActionsLimit {
		t.Errorf("defaults: %+v, %v", p, err)
	}
	for _, p := range []slotstore.ActionsParams{{Limit: -1}, {Limit: MaxActionsLimit + 1}, {Before: -1}} {
		if _, err := NormalizeActions(p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", p, err)
		}
	}
	if p, err := NormalizeActions(slotstore.ActionsParams{Limit: MaxActionsLimit}); err != nil || p.Limit != MaxActionsLimit {
		t.Errorf("the largest limit: %+v, %v", p, err)
	}
}
