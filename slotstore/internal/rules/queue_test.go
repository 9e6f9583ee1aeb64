package rules_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// A first claim with queue waits for the job's other running slots: those
// under a live lease, and those whose lease expired while a takeover may
// still win them; Remaining is the least time left, 0 for an expired one.
func TestQueue(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	born := now.Add(-time.Hour)
	slot := now.Add(-10 * time.Second)
	req := func(mut func(*slotstore.ClaimRequest)) slotstore.ClaimRequest {
		r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute, Overlap: policy.OverlapQueue,
			OnCrash: policy.OnCrashRetry, MaxAttempts: 3}
		if mut != nil {
			mut(&r)
		}
		return r
	}
	skip := func(r *slotstore.ClaimRequest) { r.OnCrash = policy.OnCrashSkip }
	unbounded := func(r *slotstore.ClaimRequest) { r.MaxAttempts = 0 }
	term := func(r *slotstore.ClaimRequest) { r.Term = true }
	// other is a running marker of another slot of the job, i minutes
	// before slot, claimed at claimed with its lease ending left from now.
	other := func(i, attempt int, claimed time.Time, left time.Duration) slotstore.Marker {
		return slotstore.Marker{Job: "j", Slot: slot.Add(-time.Duration(i) * time.Minute), State: slotstore.StateRunning,
			Holder: "a", Fence: int64(i), Attempt: attempt, ClaimedAt: claimed, LeaseEnd: now.Add(left)}
	}
	since := born.Add(time.Minute)
	crashed := other(1, 1, since, -time.Second)
	spent := other(2, 3, since, -time.Second)
	stale := other(3, 1, born.Add(-time.Minute), -time.Second)
	endsNow := other(4, 1, since, 0)
	live := other(5, 3, born.Add(-time.Minute), 20*time.Second)
	sooner := other(6, 1, since, 5*time.Second)
	done := other(7, 1, since, -time.Second)
	done.State = slotstore.StateDone
	for _, tc := range []struct {
		name    string
		req     slotstore.ClaimRequest
		running []slotstore.Marker
		queued  bool
		wait    time.Duration
	}{
		{"nothing running", req(nil), nil, false, 0},
		{"live lease", req(nil), []slotstore.Marker{live}, true, 20 * time.Second},
		{"the least live lease", req(nil), []slotstore.Marker{live, sooner}, true, 5 * time.Second},
		{"crashed holder, attempts left", req(nil), []slotstore.Marker{crashed}, true, 0},
		{"crashed holder, no bound on attempts", req(unbounded), []slotstore.Marker{spent}, true, 0},
		{"lease ends exactly now", req(nil), []slotstore.Marker{endsNow}, true, 0},
		{"crashed holder beside a live lease", req(nil), []slotstore.Marker{live, crashed}, true, 0},
		{"crashed holder, on_crash skip", req(skip), []slotstore.Marker{crashed}, false, 0},
		{"on_crash skip, a live lease counts", req(skip), []slotstore.Marker{crashed, sooner}, true, 5 * time.Second},
		{"crashed holder, attempts spent", req(nil), []slotstore.Marker{spent}, false, 0},
		{"claimed before the generation", req(nil), []slotstore.Marker{stale}, false, 0},
		{"claimed before the generation, a term's", req(term), []slotstore.Marker{stale}, true, 0},
		{"not running", req(nil), []slotstore.Marker{done}, false, 0},
		{"only blockers spent or stale", req(nil), []slotstore.Marker{spent, stale}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rules.Decide(nil, tc.req, now, born, tc.running)
			if want := map[bool]rules.Decision{true: rules.DecideQueue, false: rules.DecideWin}[tc.queued]; d != want {
				t.Fatalf("Decide = %v, want %v", d, want)
			}
			if !tc.queued {
				return
			}
			_, res := rules.Apply(d, slotstore.Marker{}, tc.req, "b", "", 0, now)
			if res.Status != slotstore.Queued || res.Marker != (slotstore.Marker{Job: "j", Slot: slot}) {
				t.Errorf("Apply: %v, marker %+v", res.Status, res.Marker)
			}
			if got := rules.QueueWait(tc.running, tc.req, now, born); got != tc.wait {
				t.Errorf("QueueWait = %v, want %v", got, tc.wait)
			}
		})
	}
}
