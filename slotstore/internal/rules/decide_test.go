package rules_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// The claim decision table, case by case: what every backend must do.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	slot := now.Add(-10 * time.Second)
	live, expired := now.Add(time.Second), now.Add(-time.Second)
	m := func(state slotstore.State, leaseEnd time.Time, attempt int) *slotstore.Marker {
		return &slotstore.Marker{Job: "j", Slot: slot, State: state, Holder: "a", Fence: 7, Attempt: attempt, LeaseEnd: leaseEnd}
	}
	req := func(mut func(*slotstore.ClaimRequest)) slotstore.ClaimRequest {
		r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute, OnCrash: policy.OnCrashRetry}
		if mut != nil {
			mut(&r)
		}
		return r
	}
	skip := func(r *slotstore.ClaimRequest) { r.OnCrash = policy.OnCrashSkip }
	max2 := func(r *slotstore.ClaimRequest) { r.MaxAttempts = 2 }
	only := func(r *slotstore.ClaimRequest) { r.TakeoverOnly = true }
	forbid := func(r *slotstore.ClaimRequest) { r.Overlap = policy.OverlapForbid }
	replace := func(r *slotstore.ClaimRequest) { r.Overlap = policy.OverlapReplace }
	both := func(muts ...func(*slotstore.ClaimRequest)) func(*slotstore.ClaimRequest) {
		return func(r *slotstore.ClaimRequest) {
			for _, m := range muts {
				m(r)
			}
		}
	}
	// The job's other slots, as a claim's overlap check sees them.
	other := func(state slotstore.State, leaseEnd time.Time) slotstore.Marker {
		return slotstore.Marker{Job: "j", Slot: slot.Add(-time.Minute), State: state, Holder: "a", Fence: 3, Attempt: 1, LeaseEnd: leaseEnd}
	}
	liveOther := []slotstore.Marker{other(slotstore.StateRunning, live)}
	expiredOther := []slotstore.Marker{other(slotstore.StateRunning, expired)}
	notRunning := []slotstore.Marker{other(slotstore.StateRetrying, live), other(slotstore.StateDone, live)}
	otherJob := []slotstore.Marker{{Job: "k", Slot: slot.Add(-time.Minute), State: slotstore.StateRunning, LeaseEnd: live}}
	sameSlot := []slotstore.Marker{{Job: "j", Slot: slot, State: slotstore.StateRunning, LeaseEnd: live}}
	for _, tc := range []struct {
		name    string
		marker  *slotstore.Marker
		req     slotstore.ClaimRequest
		running []slotstore.Marker
		want    rules.Decision
		status  slotstore.Status
	}{
		{"no marker", nil, req(nil), liveOther, rules.DecideWin, slotstore.Won},
		{"no marker, takeover only", nil, req(only), nil, rules.DecideLose, slotstore.Absent},
		{"forbid, another slot live", nil, req(forbid), liveOther, rules.DecideSkip, slotstore.Skipped},
		{"forbid, another slot expired", nil, req(forbid), expiredOther, rules.DecideWin, slotstore.Won},
		{"forbid, other slots not running", nil, req(forbid), notRunning, rules.DecideWin, slotstore.Won},
		{"forbid, another job live", nil, req(forbid), otherJob, rules.DecideWin, slotstore.Won},
		{"forbid, own slot in the list", nil, req(forbid), sameSlot, rules.DecideWin, slotstore.Won},
		{"forbid, takeover only", nil, req(both(forbid, only)), liveOther, rules.DecideLose, slotstore.Absent},
		{"forbid, takeover of an expired lease", m(slotstore.StateRunning, expired, 1), req(forbid), liveOther, rules.DecideWin, slotstore.Won},
		{"forbid, released", m(slotstore.StateReleased, live, 1), req(forbid), liveOther, rules.DecideWin, slotstore.Won},
		{"forbid, due retry", m(slotstore.StateRetrying, expired, 1), req(forbid), liveOther, rules.DecideWin, slotstore.Won},
		{"replace, another slot live", nil, req(replace), liveOther, rules.DecideReplace, slotstore.Won},
		{"replace, another slot expired", nil, req(replace), expiredOther, rules.DecideReplace, slotstore.Won},
		{"replace, nothing else running", nil, req(replace), notRunning, rules.DecideWin, slotstore.Won},
		{"replace, another job", nil, req(replace), otherJob, rules.DecideWin, slotstore.Won},
		{"replace, takeover only", nil, req(both(replace, only)), liveOther, rules.DecideLose, slotstore.Absent},
		{"replace, takeover of an expired lease", m(slotstore.StateRunning, expired, 1), req(replace), liveOther, rules.DecideWin, slotstore.Won},
		{"retry not due", m(slotstore.StateRetrying, live, 1), req(nil), nil, rules.DecideLose, slotstore.Waiting},
		{"retry due", m(slotstore.StateRetrying, expired, 1), req(nil), nil, rules.DecideWin, slotstore.Won},
		{"retry due exactly now", m(slotstore.StateRetrying, now, 1), req(nil), nil, rules.DecideWin, slotstore.Won},
		{"retry due, on_crash skip and attempts spent", m(slotstore.StateRetrying, expired, 2), req(both(skip, max2)), nil, rules.DecideWin, slotstore.Won},
		{"retry due, takeover only", m(slotstore.StateRetrying, expired, 1), req(only), nil, rules.DecideWin, slotstore.Won},
		{"skipped", m(slotstore.StateSkipped, expired, 0), req(nil), nil, rules.DecideLose, slotstore.Skipped},
		{"replaced", m(slotstore.StateReplaced, expired, 1), req(nil), nil, rules.DecideLose, slotstore.Finished},
		{"live lease", m(slotstore.StateRunning, live, 1), req(nil), nil, rules.DecideLose, slotstore.Held},
		{"expired lease", m(slotstore.StateRunning, expired, 1), req(nil), nil, rules.DecideWin, slotstore.Won},
		{"expired lease, takeover only", m(slotstore.StateRunning, expired, 1), req(only), nil, rules.DecideWin, slotstore.Won},
		{"expired lease, on_crash skip", m(slotstore.StateRunning, expired, 1), req(skip), nil, rules.DecideAbandon, slotstore.Abandoned},
		{"expired lease, attempts left", m(slotstore.StateRunning, expired, 1), req(max2), nil, rules.DecideWin, slotstore.Won},
		{"expired lease, attempts spent", m(slotstore.StateRunning, expired, 2), req(max2), nil, rules.DecideAbandon, slotstore.Abandoned},
		{"lease ends exactly now", m(slotstore.StateRunning, now, 1), req(nil), nil, rules.DecideWin, slotstore.Won},
		{"released", m(slotstore.StateReleased, live, 5), req(max2), nil, rules.DecideWin, slotstore.Won},
		{"done", m(slotstore.StateDone, expired, 1), req(nil), nil, rules.DecideLose, slotstore.Finished},
		{"abandoned", m(slotstore.StateAbandoned, expired, 1), req(nil), nil, rules.DecideLose, slotstore.Abandoned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rules.Decide(tc.marker, tc.req, now, time.Time{}, tc.running)
			if d != tc.want {
				t.Fatalf("Decide = %v, want %v", d, tc.want)
			}
			var cur slotstore.Marker
			if tc.marker != nil {
				cur = *tc.marker
			}
			got, res := rules.Apply(d, cur, tc.req, "b", "", 8, now)
			if res.Status != tc.status {
				t.Errorf("status %v, want %v", res.Status, tc.status)
			}
			if res.Status == slotstore.Won {
				if got.Fence != 8 || got.Holder != "b" || got.Attempt != cur.Attempt+1 || !got.LeaseEnd.Equal(now.Add(time.Minute)) ||
					got.State != slotstore.StateRunning || got.Reason != "" || res.Claim.PrevHolder != cur.Holder ||
					res.Claim.Retry != (cur.State == slotstore.StateRetrying) || res.Err() != nil {
					t.Errorf("won marker %+v, claim %+v", got, res.Claim)
				}
			} else if !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
				t.Errorf("Err() = %v, want ErrSlotTaken", res.Err())
			}
			if (res.Status == slotstore.Held || res.Status == slotstore.Waiting) && res.Remaining != time.Second {
				t.Errorf("remaining %v, want 1s", res.Remaining)
			}
			switch d {
			case rules.DecideSkip:
				if got.State != slotstore.StateSkipped || got.Reason != slotstore.ReasonOverlap || got.Holder != "b" ||
					got.Fence != 0 || got.Attempt != 0 || !got.FinishedAt.Equal(now) || !got.KeepUntil.Equal(slot.Add(tc.req.Retain)) {
					t.Errorf("skipped marker %+v", got)
				}
			case rules.DecideAbandon:
				want := rules.ReasonMaxAttempts
				if tc.req.OnCrash == policy.OnCrashSkip {
					want = rules.ReasonOnCrashSkip
				}
				if got.State != slotstore.StateAbandoned || got.Reason != want || !got.FinishedAt.Equal(now) {
					t.Errorf("abandoned marker %+v, want reason %q", got, want)
				}
			}
		})
	}
}

// Supersede replaces the job's other running slots, oldest first, and
// nothing else.
func TestSupersede(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	at := func(min int) time.Time { return time.Date(2026, 11, 29, 2, min, 0, 0, time.UTC) }
	running := []slotstore.Marker{
		{Job: "j", Slot: at(0), State: slotstore.StateRunning, Fence: 9, LeaseEnd: now.Add(time.Minute)},
		{Job: "j", Slot: at(3), State: slotstore.StateRunning, Fence: 5, LeaseEnd: now.Add(-time.Minute)}, // expired
		{Job: "j", Slot: at(1), State: slotstore.StateRunning, Fence: 7, LeaseEnd: now.Add(time.Minute)},
		{Job: "j", Slot: at(2), State: slotstore.StateRunning, Fence: 11, LeaseEnd: now.Add(time.Minute)}, // the winner's own
		{Job: "j", Slot: at(4), State: slotstore.StateRetrying, Fence: 4, LeaseEnd: now.Add(time.Minute)},
		{Job: "k", Slot: at(5), State: slotstore.StateRunning, Fence: 3, LeaseEnd: now.Add(time.Minute)},
	}
	won := slotstore.Marker{Job: "j", Slot: at(2), State: slotstore.StateRunning, Fence: 12}
	got := rules.Supersede(running, won, now)
	var fences []int64
	for _, m := range got {
		fences = append(fences, m.Fence)
		if m.State != slotstore.StateReplaced || m.Reason != "replaced by 2026-11-29T02:02:00Z" ||
			!m.LeaseEnd.Equal(now) || !m.FinishedAt.Equal(now) {
			t.Errorf("replaced marker %+v", m)
		}
	}
	if !slices.Equal(fences, []int64{9, 7, 5}) {
		t.Errorf("replaced fences %v, want 9 7 5 (slots 0, 1, 3)", fences)
	}
	if running[0].State != slotstore.StateRunning {
		t.Error("Supersede changed its argument")
	}
}

// ApplySkip records a slot without a marker and leaves every other alone,
// answering as a losing claim would.
func TestApplySkip(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	slot := now.Add(-10 * time.Second)
	r := slotstore.SkipRequest{Job: "j", Slot: slot, Reason: "missed", Retain: time.Hour}
	m, res, changed := rules.ApplySkip(nil, r, "b", now)
	if !changed || res.Status != slotstore.Skipped || m.State != slotstore.StateSkipped || m.Reason != "missed" ||
		m.Holder != "b" || m.Fence != 0 || m.Attempt != 0 || !m.FinishedAt.Equal(now) || !m.KeepUntil.Equal(slot.Add(time.Hour)) {
		t.Errorf("skip of a slot without a marker: %+v, %v, changed %v", m, res.Status, changed)
	}
	for state, want := range map[slotstore.State]slotstore.Status{
		slotstore.StateRunning:   slotstore.Held,
		slotstore.StateReleased:  slotstore.Held,
		slotstore.StateRetrying:  slotstore.Waiting,
		slotstore.StateDone:      slotstore.Finished,
		slotstore.StateReplaced:  slotstore.Finished,
		slotstore.StateAbandoned: slotstore.Abandoned,
		slotstore.StateSkipped:   slotstore.Skipped,
	} {
		for _, leaseEnd := range []time.Time{now.Add(time.Second), now.Add(-time.Second)} {
			cur := slotstore.Marker{Job: "j", Slot: slot, State: state, Holder: "a", Fence: 7, LeaseEnd: leaseEnd, Reason: "x"}
			m, res, changed := rules.ApplySkip(&cur, r, "b", now)
			if changed || m != cur || res.Status != want || res.Remaining < 0 {
				t.Errorf("skip of a %s slot: %+v, %v, remaining %v, changed %v; want %v, unchanged", state, m, res.Status, res.Remaining, changed, want)
			}
		}
	}
	for _, bad := range []slotstore.SkipRequest{
		{Slot: slot, Reason: "missed"},
		{Job: "j", Reason: "missed"},
		{Job: "j", Slot: slot},
	} {
		if _, err := rules.NormalizeSkips([]slotstore.SkipRequest{r, bad}); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	out, err := rules.NormalizeSkips([]slotstore.SkipRequest{{Job: "j", Slot: slot.Add(time.Millisecond), Reason: "r"}})
	if err != nil || out[0].Retain != rules.DefaultRetain || !out[0].Slot.Equal(slot) {
		t.Errorf("normalized %+v, %v", out, err)
	}
}

// TestDecideGeneration: a slot older than its job's generation gets no first
// marker, and a marker claimed before it is abandoned, not taken over, once
// no live lease holds it; a term claim is exempt from both.
func TestDecideGeneration(t *testing.T) {
	born := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	now := born.Add(time.Minute)
	before, after := born.Add(-time.Second), born.Add(time.Second)
	m := func(state slotstore.State, claimed, leaseEnd time.Time) *slotstore.Marker {
		return &slotstore.Marker{Job: "j", Slot: before, State: state, Fence: 7, Attempt: 1, ClaimedAt: claimed, LeaseEnd: leaseEnd}
	}
	r := slotstore.ClaimRequest{Job: "j", Slot: before, Lease: time.Minute, OnCrash: policy.OnCrashRetry}
	term := r
	term.Term = true
	later := r
	later.Slot = after
	for _, tc := range []struct {
		name   string
		marker *slotstore.Marker
		req    slotstore.ClaimRequest
		want   rules.Decision
	}{
		{"no marker, older slot", nil, r, rules.DecideDataLoss},
		{"no marker, slot of the generation", nil, later, rules.DecideWin},
		{"no marker, term", nil, term, rules.DecideWin},
		{"running from before, expired", m(slotstore.StateRunning, before, now.Add(-time.Second)), r, rules.DecideAbandonDataLoss},
		{"running from before, live", m(slotstore.StateRunning, before, now.Add(time.Second)), r, rules.DecideLose},
		{"released from before", m(slotstore.StateReleased, before, before), r, rules.DecideAbandonDataLoss},
		{"retrying from before, due", m(slotstore.StateRetrying, before, now.Add(-time.Second)), r, rules.DecideAbandonDataLoss},
		{"retrying from before, not due", m(slotstore.StateRetrying, before, now.Add(time.Second)), r, rules.DecideLose},
		{"running from before, term", m(slotstore.StateRunning, before, now.Add(-time.Second)), term, rules.DecideWin},
		{"running since the generation, expired", m(slotstore.StateRunning, after, now.Add(-time.Second)), r, rules.DecideWin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rules.Decide(tc.marker, tc.req, now, born, nil)
			if d != tc.want {
				t.Fatalf("Decide = %v, want %v", d, tc.want)
			}
			if d == rules.DecideAbandonDataLoss {
				got, res := rules.Apply(d, *tc.marker, tc.req, "b", "", 0, now)
				if res.Status != slotstore.Abandoned || got.State != slotstore.StateAbandoned || got.Reason != slotstore.ReasonDataLoss {
					t.Errorf("applied: %v %+v", res.Status, got)
				}
			}
		})
	}
}
