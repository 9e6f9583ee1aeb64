package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

func TestValidateNotes(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"a pause with a note", ValidatePause(slotstore.PauseParams{Job: "j", Paused: true, By: "ops", Reason: "données"}), true},
		{"a resume ignores its note", ValidatePause(slotstore.PauseParams{Job: "j", Reason: "\x00"}), true},
		{"a reason at the limit", ValidatePause(slotstore.PauseParams{Paused: true, Reason: strings.Repeat("é", MaxNote/2)}), true},
		{"a reason over the limit", ValidatePause(slotstore.PauseParams{Paused: true, Reason: strings.Repeat("x", MaxNote+1)}), false},
		{"a NUL in by", ValidatePause(slotstore.PauseParams{Paused: true, By: "a\x00b"}), false},
		{"a reason not UTF-8", ValidatePause(slotstore.PauseParams{Paused: true, Reason: "\xff"}), false},
		{"a beat", ValidateBeat(slotstore.Beat{Replica: "r", Version: "v1", TTL: time.Second, Duties: []slotstore.DutyTerm{{Name: "d"}}}), true},
		{"a beat without a replica", ValidateBeat(slotstore.Beat{TTL: time.Second}), false},
		{"a beat without a TTL", ValidateBeat(slotstore.Beat{Replica: "r"}), false},
		{"a NUL in the replica", ValidateBeat(slotstore.Beat{Replica: "r\x00", TTL: time.Second}), false},
		{"a version not UTF-8", ValidateBeat(slotstore.Beat{Replica: "r", Version: "v\xff", TTL: time.Second}), false},
		{"a duty name with a NUL", ValidateBeat(slotstore.Beat{Replica: "r", TTL: time.Second, Duties: []slotstore.DutyTerm{{Name: "\x00"}}}), false},
	} {
		if c.ok != (c.err == nil) || c.err != nil && !errors.Is(c.err, slotstore.ErrInvalid) {
			t.Errorf("%s: %v", c.name, c.err)
		}
	}
}
