package rules_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// TestDecideBackfill: a Backfill claim wins a slot of its job's generation
// recorded skipped since that began, for any reason but data loss, as a
// first claim; before its NotBefore it answers NotYet, and with forbid while
// another slot runs it changes nothing. Once the store's clock has reached
// Slot+Retain it is a takeover-only claim. Everywhere else it is an
// ordinary claim.
func TestDecideBackfill(t *testing.T) {
	born := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	now := born.Add(2 * time.Hour)
	slot := born.Add(time.Hour)
	live, expired := now.Add(time.Second), now.Add(-time.Second)
	skipped := func(reason string, claimed time.Time) *slotstore.Marker {
		return &slotstore.Marker{Job: "j", Slot: slot, State: slotstore.StateSkipped, Holder: "a", ClaimedAt: claimed,
			LeaseEnd: claimed, FinishedAt: claimed, KeepUntil: slot.Add(time.Hour), Reason: reason, Manual: true}
	}
	missed := skipped("missed: down", born.Add(90*time.Minute))
	// Skips recorded after the generation began, of a slot older than it
	// (which may have run before the loss) and of one of its very instant.
	older, ofBorn := skipped("missed: store unavailable", born.Add(time.Minute)), skipped("missed: late", born.Add(time.Minute))
	older.Slot, ofBorn.Slot = born.Add(-time.Second), born.Add(slotstore.ClaimLead)
	req := func(muts ...func(*slotstore.ClaimRequest)) slotstore.ClaimRequest {
		r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute, OnCrash: policy.OnCrashRetry,
			Overlap: policy.OverlapAllow, Retain: 24 * time.Hour, Backfill: true, Manual: true}
		for _, m := range muts {
			m(&r)
		}
		return r
	}
	forbid := func(r *slotstore.ClaimRequest) { r.Overlap = policy.OverlapForbid }
	plain := func(r *slotstore.ClaimRequest) { r.Backfill = false }
	only := func(r *slotstore.ClaimRequest) { r.TakeoverOnly = true }
	early := func(r *slotstore.ClaimRequest) { r.NotBefore = now.Add(time.Minute) }
	// The slot's retention ends now, or a nanosecond later.
	kept := func(r *slotstore.ClaimRequest) { r.Retain = now.Sub(r.Slot) }
	keptLonger := func(r *slotstore.ClaimRequest) { r.Retain = now.Sub(r.Slot) + time.Nanosecond }
	at := func(slot time.Time) func(*slotstore.ClaimRequest) {
		return func(r *slotstore.ClaimRequest) { r.Slot = slot }
	}
	due := func(r *slotstore.ClaimRequest) { r.NotBefore = now }
	other := func(leaseEnd time.Time) []slotstore.Marker {
		return []slotstore.Marker{{Job: "j", Slot: slot.Add(-time.Minute), State: slotstore.StateRunning, Fence: 3, LeaseEnd: leaseEnd}}
	}
	running := &slotstore.Marker{Job: "j", Slot: slot, State: slotstore.StateRunning, Holder: "a", Fence: 7, Attempt: 1,
		ClaimedAt: born.Add(time.Minute), LeaseEnd: expired}
	done := &slotstore.Marker{Job: "j", Slot: slot, State: slotstore.StateDone, Holder: "a", Fence: 7, Attempt: 1,
		ClaimedAt: born.Add(time.Minute), LeaseEnd: expired, Outcome: slotstore.Succeeded}
	for _, tc := range []struct {
		name    string
		marker  *slotstore.Marker
		req     slotstore.ClaimRequest
		running []slotstore.Marker
		want    rules.Decision
		status  slotstore.Status
	}{
		{"missed", missed, req(), nil, rules.DecideWin, slotstore.Won},
		{"caught up", skipped("catch_up latest", born.Add(time.Second)), req(), nil, rules.DecideWin, slotstore.Won},
		{"skipped for overlap", skipped(slotstore.ReasonOverlap, born.Add(time.Second)), req(), nil, rules.DecideWin, slotstore.Won},
		{"skipped as the generation began", skipped("missed: down", born), req(), nil, rules.DecideWin, slotstore.Won},
		{"skipped before the generation", skipped("missed: down", born.Add(-time.Millisecond)), req(), nil, rules.DecideLose, slotstore.Skipped},
		{"skipped for data loss", skipped(slotstore.ReasonDataLoss, born.Add(time.Second)), req(), nil, rules.DecideLose, slotstore.Skipped},
		{"older than the generation, skipped since", older, req(func(r *slotstore.ClaimRequest) { r.Slot = older.Slot }), nil,
			rules.DecideLose, slotstore.Skipped},
		{"of the generation's first covered instant", ofBorn, req(func(r *slotstore.ClaimRequest) { r.Slot = ofBorn.Slot }), nil,
			rules.DecideWin, slotstore.Won},
		{"less than ClaimLead after the generation began", ofBorn, req(func(r *slotstore.ClaimRequest) {
			r.Slot = born.Add(slotstore.ClaimLead - time.Second)
		}), nil, rules.DecideLose, slotstore.Skipped},
		{"not a backfill", missed, req(plain), nil, rules.DecideLose, slotstore.Skipped},
		{"takeover only", missed, req(only), nil, rules.DecideWin, slotstore.Won},
		{"before its NotBefore", missed, req(early), nil, rules.DecideNotYet, slotstore.NotYet},
		{"at its NotBefore", missed, req(due), nil, rules.DecideWin, slotstore.Won},
		{"data loss, before its NotBefore", skipped(slotstore.ReasonDataLoss, born), req(early), nil, rules.DecideLose, slotstore.Skipped},
		{"forbid, another slot live", missed, req(forbid), other(live), rules.DecideLose, slotstore.Skipped},
		{"forbid, takeover only, another slot live", missed, req(forbid, only), other(live), rules.DecideLose, slotstore.Skipped},
		{"forbid, another slot expired", missed, req(forbid), other(expired), rules.DecideWin, slotstore.Won},
		{"allow, another slot live", missed, req(), other(live), rules.DecideWin, slotstore.Won},
		// Once the store's clock reaches Slot+Retain, a takeover-only claim
		// without Backfill: it creates nothing, and a skipped slot loses.
		{"retention ended, skipped", missed, req(kept), nil, rules.DecideLose, slotstore.Skipped},
		{"retention ends a nanosecond later, skipped", missed, req(keptLonger), nil, rules.DecideWin, slotstore.Won},
		{"retention ended, no marker", nil, req(kept), nil, rules.DecideLose, slotstore.Absent},
		{"retention ends a nanosecond later, no marker", nil, req(keptLonger), nil, rules.DecideWin, slotstore.Won},
		{"retention ended, no marker, before its NotBefore", nil, req(kept, early), nil, rules.DecideLose, slotstore.Absent},
		{"retention ended, skipped, before its NotBefore", missed, req(kept, early), nil, rules.DecideLose, slotstore.Skipped},
		{"retention ended, no marker, forbid, another slot live", nil, req(kept, forbid), other(live), rules.DecideLose,
			slotstore.Absent},
		{"retention ended, no marker, before the generation", nil, req(at(born.Add(-time.Hour)), kept), nil, rules.DecideLose,
			slotstore.Absent},
		{"default retention ended, no marker", nil, req(at(now.Add(-rules.DefaultRetain)), func(r *slotstore.ClaimRequest) {
			r.Retain = 0
		}), nil, rules.DecideLose, slotstore.Absent},
		{"retention ended, expired lease", running, req(kept), nil, rules.DecideWin, slotstore.Won},
		{"retention ended, done", done, req(kept), nil, rules.DecideLose, slotstore.Finished},
		// An ordinary claim everywhere else.
		{"no marker", nil, req(), nil, rules.DecideWin, slotstore.Won},
		{"no marker, forbid, another slot live", nil, req(forbid), other(live), rules.DecideSkip, slotstore.Skipped},
		{"no marker, before the generation", nil, req(func(r *slotstore.ClaimRequest) { r.Slot = born.Add(-time.Hour) }), nil,
			rules.DecideDataLoss, slotstore.Skipped},
		{"no marker, takeover only", nil, req(only), nil, rules.DecideLose, slotstore.Absent},
		{"expired lease", running, req(), nil, rules.DecideWin, slotstore.Won},
		{"done", done, req(), nil, rules.DecideLose, slotstore.Finished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := rules.NormalizeClaim(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			d := rules.Decide(tc.marker, r, now, born, tc.running)
			if !rules.ReadsRunning(tc.marker, r) && rules.Decide(tc.marker, r, now, born, nil) != d {
				t.Errorf("ReadsRunning = false, yet the decision depends on the running slots")
			}
			if d != tc.want {
				t.Fatalf("Decide = %v, want %v", d, tc.want)
			}
			var cur slotstore.Marker
			if tc.marker != nil {
				cur = *tc.marker
			}
			got, res := rules.Apply(d, cur, r, "b", "i2", 8, now)
			if res.Status != tc.status {
				t.Fatalf("status %v, want %v", res.Status, tc.status)
			}
			switch {
			case res.Status == slotstore.Won && cur.State == slotstore.StateSkipped:
				want := slotstore.Marker{Job: "j", Slot: r.Slot, State: slotstore.StateRunning, Holder: "b", Fence: 8, Attempt: 1,
					ClaimedAt: now, LeaseEnd: now.Add(time.Minute), KeepUntil: r.Slot.Add(r.Retain), Backfill: true, Incarnation: "i2"}
				if got != want || res.Marker != want {
					t.Errorf("backfilled marker\n%+v\nwant\n%+v", got, want)
				}
				if c := res.Claim; c.Ref != want.Ref() || c.Attempt != 1 || c.PrevHolder != "" || c.Retry || c.Takeover() {
					t.Errorf("backfill claim %+v, want a first claim's", c)
				}
			case res.Status == slotstore.Won && cur.State == slotstore.StateRunning:
				if c := res.Claim; c.Attempt != cur.Attempt+1 || c.PrevHolder != cur.Holder || got.Fence != 8 {
					t.Errorf("takeover %+v of %+v, want an ordinary claim's", c, cur)
				}
			case res.Status == slotstore.NotYet:
				if res.Remaining != time.Minute || got != cur || d.Changes() {
					t.Errorf("not yet: remaining %v, marker %+v", res.Remaining, got)
				}
			case d == rules.DecideLose && (got != cur || res.Marker != cur):
				t.Errorf("a losing backfill changed %+v to %+v", cur, got)
			}
		})
	}
}

// A Backfill claim needs overlap allow or forbid, and no term.
func TestNormalizeBackfill(t *testing.T) {
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	good := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Second, Backfill: true}
	for _, o := range []policy.Overlap{"", policy.OverlapAllow, policy.OverlapForbid} {
		r := good
		r.Overlap = o
		if _, err := rules.NormalizeClaims([]slotstore.ClaimRequest{r}); err != nil {
			t.Errorf("backfill with overlap %q: %v", o, err)
		}
	}
	replace, term := good, good
	replace.Overlap = policy.OverlapReplace
	term.Term = true
	for _, bad := range []slotstore.ClaimRequest{replace, term} {
		if _, err := rules.NormalizeClaims([]slotstore.ClaimRequest{good, bad}); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	term.Backfill = false
	if _, err := rules.NormalizeClaims([]slotstore.ClaimRequest{term}); err != nil {
		t.Errorf("a term claim: %v", err)
	}
}
