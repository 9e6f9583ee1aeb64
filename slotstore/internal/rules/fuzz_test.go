package rules_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// FuzzDecide runs the decision table on any marker (or none) and any claim
// request: NormalizeClaim accepts only requests whose normalized form it
// accepts again unchanged, with a whole-second UTC slot that is not zero;
// Decide never wins a final slot, a slot under a live lease or a retry not
// due, nor creates a marker older than the generation; a losing Apply changes
// nothing; and Apply wins exactly when Decide says so, with a ticket its
// holder can use. Times are offsets from now, in nanoseconds; with zero set,
// the slot is an offset from the zero Time.
func FuzzDecide(f *testing.F) {
	type seed struct {
		state                      string // "" for no marker
		attempt                    int
		leaseEnd, claimed, slot    int64
		lease                      int64
		onCrash, overlap           string
		maxAttempts                int
		takeoverOnly, term, manual bool
		born, other                int64 // generation; lease end of another running slot of the job
	}
	s, m, h := int64(time.Second), int64(time.Minute), int64(time.Hour)
	// From TestDecide.
	for _, tc := range []seed{
		{"", 0, 0, 0, -10 * s, m, "", "", 0, false, false, false, -h, s},
		{"", 0, 0, 0, -10 * s, m, "", "", 0, true, false, false, -h, s},
		{"", 0, 0, 0, -10 * s, m, "", "forbid", 0, false, false, false, -h, s},
		{"", 0, 0, 0, -10 * s, m, "", "replace", 0, false, false, true, -h, -s},
		{"", 0, 0, 0, -10 * s, m, "", "", 0, false, true, false, h, 0},
		{"running", 1, -s, -m, -10 * s, m, "retry", "forbid", 0, false, false, false, -h, s},
		{"running", 1, s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"running", 2, -s, -m, -10 * s, m, "", "", 2, false, false, false, -h, 0},
		{"running", 1, -s, -m, -10 * s, m, "skip", "", 0, false, false, false, -h, 0},
		{"running", 1, -s, -2 * h, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"retrying", 1, s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"retrying", 2, 0, -m, -10 * s, m, "skip", "", 2, true, false, false, -h, 0},
		{"released", 5, s, -m, -10 * s, m, "", "", 2, false, false, false, -h, 0},
		{"done", 1, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"skipped", 0, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"replaced", 1, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"abandoned", 1, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0},
		{"", 0, 0, 0, -10*s + 999, 0, "panic", "sometimes", -1, false, false, false, -h, 0},
	} {
		f.Add(tc.state, tc.attempt, tc.leaseEnd, tc.claimed, tc.slot, tc.lease, tc.onCrash, tc.overlap, tc.maxAttempts,
			tc.takeoverOnly, tc.term, tc.manual, tc.born, tc.other, false)
	}
	// A term claim of a slot 384ms after the zero Time, which truncated to a
	// zero slot that NormalizeClaim had already let through (found by FuzzStore).
	f.Add("", 0, int64(0), int64(0), 384*int64(time.Millisecond), m, "", "replace", 0, false, true, false, -h, int64(0), true)
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	at := func(ns int64) time.Time { return now.Add(time.Duration(ns)) }
	f.Fuzz(func(t *testing.T, state string, attempt int, leaseEnd, claimed, slot, lease int64, onCrash, overlap string,
		maxAttempts int, takeoverOnly, term, manual bool, born, other int64, zero bool) {
		r := slotstore.ClaimRequest{Job: "j", Slot: at(slot), Lease: time.Duration(lease), OnCrash: policy.OnCrash(onCrash),
			MaxAttempts: maxAttempts, TakeoverOnly: takeoverOnly, Overlap: policy.Overlap(overlap), Term: term, Manual: manual}
		if zero {
			r.Slot = time.Time{}.Add(time.Duration(slot))
		}
		n, err := rules.NormalizeClaim(r)
		if err != nil {
			return
		}
		if again, err := rules.NormalizeClaim(n); err != nil || !reflect.DeepEqual(again, n) || n.Slot.IsZero() ||
			n.Slot.Location() != time.UTC || !n.Slot.Equal(n.Slot.Truncate(time.Second)) {
			t.Fatalf("NormalizeClaim(%+v) = %+v, and again %+v, %v", r, n, again, err)
		}
		var cur *slotstore.Marker
		if state != "" {
			cur = &slotstore.Marker{Job: "j", Slot: n.Slot, State: slotstore.State(state), Holder: "a", Fence: 7,
				Attempt: attempt, ClaimedAt: at(claimed), LeaseEnd: at(leaseEnd)}
		}
		running := []slotstore.Marker{{Job: "j", Slot: n.Slot.Add(-time.Minute), State: slotstore.StateRunning, LeaseEnd: at(other)}}
		d := rules.Decide(cur, n, now, at(born), running)
		checkDecision(t, cur, n, now, at(born), d)
		var m slotstore.Marker
		if cur != nil {
			m = *cur
		}
		got, res := rules.Apply(d, m, n, "b", "i", 8, now)
		won := d == rules.DecideWin || d == rules.DecideReplace
		switch {
		case won != (res.Status == slotstore.Won) || won != (res.Err() == nil):
			t.Fatalf("decision %v: status %v, Err %v", d, res.Status, res.Err())
		case d == rules.DecideLose && !reflect.DeepEqual(got, m):
			t.Fatalf("a losing claim changed %+v to %+v", m, got)
		case won && (got.State != slotstore.StateRunning || got.Fence != 8 || got.Attempt != m.Attempt+1 ||
			!got.LeaseEnd.Equal(now.Add(n.Lease)) || res.Claim.Ref != got.Ref() || rules.ValidateRef(res.Claim.Ref) != nil):
			t.Fatalf("won %+v, claim %+v", got, res.Claim)
		}
	})
}

// checkDecision checks what Decide may never do.
func checkDecision(t *testing.T, cur *slotstore.Marker, r slotstore.ClaimRequest, now, born time.Time, d rules.Decision) {
	t.Helper()
	win := d == rules.DecideWin || d == rules.DecideReplace
	switch {
	case d < rules.DecideWin || d > rules.DecideAbandonDataLoss:
		t.Fatalf("Decide(%+v, %+v) = %v: no such decision", cur, r, d)
	case cur == nil && r.TakeoverOnly && d != rules.DecideLose:
		t.Fatalf("takeover-only claim of no marker: %v", d)
	case cur == nil && !r.TakeoverOnly && !r.Term && r.Slot.Before(born) && d != rules.DecideDataLoss:
		t.Fatalf("claim %+v of a slot before the generation %v: %v", r, born, d)
	case cur == nil:
	case cur.State.Final() && d != rules.DecideLose:
		t.Fatalf("claim of a final marker %+v: %v", cur, d)
	case (cur.State == slotstore.StateRunning || cur.State == slotstore.StateRetrying) && now.Before(cur.LeaseEnd) &&
		d != rules.DecideLose:
		t.Fatalf("claim of %+v, held or not due until %v: %v", cur, cur.LeaseEnd, d)
	case win && cur.State != slotstore.StateRunning && cur.State != slotstore.StateRetrying && cur.State != slotstore.StateReleased:
		t.Fatalf("claim of %+v in an unknown state: %v", cur, d)
	}
}
