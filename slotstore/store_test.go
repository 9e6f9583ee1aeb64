package slotstore_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

func TestStatusAndState(t *testing.T) {
	for st, want := range map[slotstore.Status]string{slotstore.Skipped: "skipped", slotstore.Waiting: "waiting", 99: "Status(99)"} {
		if st.String() != want {
			t.Errorf("%d: %q, want %q", int(st), st.String(), want)
		}
	}
	for _, s := range []slotstore.State{slotstore.StateDone, slotstore.StateAbandoned, slotstore.StateSkipped, slotstore.StateReplaced} {
		if !s.Final() {
			t.Errorf("%s is not final", s)
		}
	}
	for _, s := range []slotstore.State{slotstore.StateRunning, slotstore.StateReleased, slotstore.StateRetrying} {
		if s.Final() {
			t.Errorf("%s is final", s)
		}
	}
}

// A generation covers the slots from its birth on, that very instant
// included.
func TestGenerationCovers(t *testing.T) {
	born := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	g := slotstore.Generation{Job: "j", Born: born}
	for _, tc := range []struct {
		slot time.Time
		want bool
	}{
		{born.Add(-time.Second), false},
		{born, false}, // a claim of it may have been made ahead, before born
		{born.Add(slotstore.ClaimLead - time.Nanosecond), false},
		{born.Add(slotstore.ClaimLead), true},
		{born.Add(slotstore.ClaimLead).In(time.FixedZone("east", 3600)), true},
		{born.Add(slotstore.ClaimLead + time.Second), true},
		{time.Time{}, false},
	} {
		if got := g.Covers(tc.slot); got != tc.want {
			t.Errorf("generation born %v covers %v: %v, want %v", born, tc.slot, got, tc.want)
		}
	}
	if !(slotstore.Generation{}).Covers(born) {
		t.Error("a zero generation does not cover a slot")
	}
}
