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
// accepts again unchanged, with a whole-second UTC slot that is not zero,
// and no Backfill claim of a term or with overlap replace; Decide never wins
// a final slot (but a Backfill claim a slot of the generation skipped since
// it began, not for data loss, NotBefore passed, and with forbid only while
// no other slot runs), a slot under a live lease or a retry not due, nor
// creates a marker older than the generation; a Backfill claim made once
// Slot+Retain has passed decides as a takeover-only one (it creates no
// marker and wins no skipped slot); a losing Apply changes
// nothing; and Apply wins exactly when Decide says so, with a ticket its
// holder can use. Times are offsets from now, in nanoseconds; with zero set,
// the slot is an offset from the zero Time; a notBefore of 0 is none.
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
		backfill, dataLoss         bool  // a Backfill claim; the marker's reason is ReasonDataLoss
		notBefore                  int64
	}
	s, m, h := int64(time.Second), int64(time.Minute), int64(time.Hour)
	// From TestDecide.
	for _, tc := range []seed{
		{"", 0, 0, 0, -10 * s, m, "", "", 0, false, false, false, -h, s, false, false, 0},
		{"", 0, 0, 0, -10 * s, m, "", "", 0, true, false, false, -h, s, false, false, 0},
		{"", 0, 0, 0, -10 * s, m, "", "forbid", 0, false, false, false, -h, s, false, false, 0},
		{"", 0, 0, 0, -10 * s, m, "", "replace", 0, false, false, true, -h, -s, false, false, 0},
		{"", 0, 0, 0, -10 * s, m, "", "", 0, false, true, false, h, 0, false, false, 0},
		{"running", 1, -s, -m, -10 * s, m, "retry", "forbid", 0, false, false, false, -h, s, false, false, 0},
		{"running", 1, s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"running", 2, -s, -m, -10 * s, m, "", "", 2, false, false, false, -h, 0, false, false, 0},
		{"running", 1, -s, -m, -10 * s, m, "skip", "", 0, false, false, false, -h, 0, false, false, 0},
		{"running", 1, -s, -2 * h, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"retrying", 1, s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"retrying", 2, 0, -m, -10 * s, m, "skip", "", 2, true, false, false, -h, 0, false, false, 0},
		{"released", 5, s, -m, -10 * s, m, "", "", 2, false, false, false, -h, 0, false, false, 0},
		{"done", 1, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"skipped", 0, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"replaced", 1, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"abandoned", 1, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, false, false, 0},
		{"", 0, 0, 0, -10*s + 999, 0, "panic", "sometimes", -1, false, false, false, -h, 0, false, false, 0},
		// Backfill claims of skipped slots: won; for data loss; skipped
		// before the generation; before NotBefore; forbid while another runs.
		{"skipped", 0, -s, -m, -10 * s, m, "", "", 0, false, false, true, -h, 0, true, false, 0},
		{"skipped", 0, -s, -m, -10 * s, m, "", "", 0, true, false, false, -h, 0, true, true, 0},
		{"skipped", 0, -s, -2 * h, -10 * s, m, "", "", 0, false, false, false, -h, 0, true, false, 0},
		{"skipped", 0, -s, -m, -10 * s, m, "", "", 0, false, false, false, -h, 0, true, false, m},
		{"skipped", 0, -s, -m, -10 * s, m, "", "forbid", 0, false, false, false, -h, s, true, false, -s},
		{"skipped", 0, -s, -m, -10 * s, m, "", "replace", 0, false, false, false, -h, s, true, false, 0},
		{"", 0, 0, 0, -10 * s, m, "", "forbid", 0, false, false, false, -h, s, true, false, 0},
		// Backfill claims once the default retention (7 days) has ended:
		// of no marker, of one skipped since the generation began, of an
		// expired lease; and a day before it ends.
		{"", 0, 0, 0, -8 * 24 * h, m, "", "forbid", 0, false, false, false, -9 * 24 * h, s, true, false, 0},
		{"skipped", 0, -s, -m, -8 * 24 * h, m, "", "", 0, false, false, false, -9 * 24 * h, 0, true, false, 0},
		{"running", 1, -s, -m, -7 * 24 * h, m, "", "", 0, false, false, false, -9 * 24 * h, 0, true, false, 0},
		{"skipped", 0, -s, -m, -6 * 24 * h, m, "", "", 0, false, false, false, -9 * 24 * h, 0, true, false, 0},
	} {
		f.Add(tc.state, tc.attempt, tc.leaseEnd, tc.claimed, tc.slot, tc.lease, tc.onCrash, tc.overlap, tc.maxAttempts,
			tc.takeoverOnly, tc.term, tc.manual, tc.born, tc.other, false, tc.backfill, tc.dataLoss, tc.notBefore)
	}
	// A term claim of a slot 384ms after the zero Time, which truncated to a
	// zero slot that NormalizeClaim had already let through (found by FuzzStore).
	f.Add("", 0, int64(0), int64(0), 384*int64(time.Millisecond), m, "", "replace", 0, false, true, false, -h, int64(0), true,
		false, false, int64(0))
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	at := func(ns int64) time.Time { return now.Add(time.Duration(ns)) }
	f.Fuzz(func(t *testing.T, state string, attempt int, leaseEnd, claimed, slot, lease int64, onCrash, overlap string,
		maxAttempts int, takeoverOnly, term, manual bool, born, other int64, zero bool, backfill, dataLoss bool, notBefore int64) {
		r := slotstore.ClaimRequest{Job: "j", Slot: at(slot), Lease: time.Duration(lease), OnCrash: policy.OnCrash(onCrash),
			MaxAttempts: maxAttempts, TakeoverOnly: takeoverOnly, Overlap: policy.Overlap(overlap), Term: term, Manual: manual,
			Backfill: backfill}
		if zero {
			r.Slot = time.Time{}.Add(time.Duration(slot))
		}
		if notBefore != 0 {
			r.NotBefore = at(notBefore)
		}
		n, err := rules.NormalizeClaim(r)
		if err != nil {
			return
		}
		if n.Backfill && (n.Term || n.Overlap == policy.OverlapReplace) {
			t.Fatalf("NormalizeClaim accepted %+v", n)
		}
		if again, err := rules.NormalizeClaim(n); err != nil || !reflect.DeepEqual(again, n) || n.Slot.IsZero() ||
			n.Slot.Location() != time.UTC || !n.Slot.Equal(n.Slot.Truncate(time.Second)) {
			t.Fatalf("NormalizeClaim(%+v) = %+v, and again %+v, %v", r, n, again, err)
		}
		var cur *slotstore.Marker
		if state != "" {
			cur = &slotstore.Marker{Job: "j", Slot: n.Slot, State: slotstore.State(state), Holder: "a", Fence: 7,
				Attempt: attempt, ClaimedAt: at(claimed), LeaseEnd: at(leaseEnd), Reason: "missed", Manual: manual}
			if dataLoss {
				cur.Reason = slotstore.ReasonDataLoss
			}
		}
		running := []slotstore.Marker{{Job: "j", Slot: n.Slot.Add(-time.Minute), State: slotstore.StateRunning, LeaseEnd: at(other)}}
		d := rules.Decide(cur, n, now, at(born), running)
		checkDecision(t, cur, n, now, at(born), running, d)
		if !rules.ReadsRunning(cur, n) && rules.Decide(cur, n, now, at(born), nil) != d {
			t.Fatalf("Decide(%+v, %+v) reads the running slots, though ReadsRunning says it does not", cur, n)
		}
		var m slotstore.Marker
		if cur != nil {
			m = *cur
		}
		got, res := rules.Apply(d, m, n, "b", "i", 8, now)
		won := d == rules.DecideWin || d == rules.DecideReplace
		attempt1 := m.Attempt + 1
		if m.State == slotstore.StateSkipped {
			attempt1 = 1 // a backfill: won as a first claim
		}
		switch {
		case won != (res.Status == slotstore.Won) || won != (res.Err() == nil):
			t.Fatalf("decision %v: status %v, Err %v", d, res.Status, res.Err())
		case d == rules.DecideLose && !reflect.DeepEqual(got, m):
			t.Fatalf("a losing claim changed %+v to %+v", m, got)
		case won && (got.State != slotstore.StateRunning || got.Fence != 8 || got.Attempt != attempt1 ||
			!got.LeaseEnd.Equal(now.Add(n.Lease)) || res.Claim.Ref != got.Ref() || rules.ValidateRef(res.Claim.Ref) != nil):
			t.Fatalf("won %+v, claim %+v", got, res.Claim)
		case won && m.State == slotstore.StateSkipped && (got.Manual || got.Reason != "" || res.Claim.PrevHolder != "" || res.Claim.Retry):
			t.Fatalf("backfilled %+v to %+v, claim %+v: not as a first claim", m, got, res.Claim)
		case d == rules.DecideNotYet && (res.Status != slotstore.NotYet || res.Remaining <= 0 || !reflect.DeepEqual(got, m)):
			t.Fatalf("not yet: %v, remaining %v, marker %+v", res.Status, res.Remaining, got)
		}
	})
}

// checkDecision checks what Decide may never do; running holds the job's
// other running slots.
func checkDecision(t *testing.T, cur *slotstore.Marker, r slotstore.ClaimRequest, now, born time.Time, running []slotstore.Marker, d rules.Decision) {
	t.Helper()
	win := d == rules.DecideWin || d == rules.DecideReplace
	if r.Backfill && !now.Before(r.Slot.Add(r.Retain)) {
		// Its slot's retention has ended: a takeover-only claim.
		if (cur == nil || cur.State == slotstore.StateSkipped) && d != rules.DecideLose {
			t.Fatalf("backfill %+v of %+v at %v, past its retention: %v", r, cur, now, d)
		}
		r.Backfill, r.TakeoverOnly = false, true
	}
	busy := false // another slot of the job runs under a live lease
	for _, o := range running {
		busy = busy || (o.State == slotstore.StateRunning && !o.Slot.Equal(r.Slot) && now.Before(o.LeaseEnd))
	}
	switch {
	case d < rules.DecideWin || d > rules.DecideNotYet:
		t.Fatalf("Decide(%+v, %+v) = %v: no such decision", cur, r, d)
	case d == rules.DecideNotYet && (!now.Before(r.NotBefore) ||
		cur != nil && (cur.State != slotstore.StateSkipped || !r.Backfill)):
		t.Fatalf("claim %+v of %+v at %v: not yet", r, cur, now)
	case cur != nil && cur.State == slotstore.StateSkipped && r.Backfill && d != rules.DecideLose &&
		(cur.Reason == slotstore.ReasonDataLoss || (d == rules.DecideWin && (cur.ClaimedAt.Before(born) || r.Slot.Before(born)))):
		t.Fatalf("backfill %+v of %+v, born %v: %v", r, cur, born, d)
	case cur != nil && cur.State == slotstore.StateSkipped && r.Backfill && d == rules.DecideWin &&
		r.Overlap == policy.OverlapForbid && busy:
		t.Fatalf("backfill %+v with forbid of %+v while another slot runs: %v", r, cur, d)
	case cur != nil && cur.State == slotstore.StateSkipped && r.Backfill && d != rules.DecideLose &&
		d != rules.DecideWin && d != rules.DecideNotYet:
		t.Fatalf("backfill %+v of %+v: %v", r, cur, d)
	case cur != nil && cur.State == slotstore.StateSkipped && r.Backfill:
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
