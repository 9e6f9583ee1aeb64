package slotstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
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
		r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute, OnCrash: slotstore.OnCrashRetry}
		if mut != nil {
			mut(&r)
		}
		return r
	}
	skip := func(r *slotstore.ClaimRequest) { r.OnCrash = slotstore.OnCrashSkip }
	max2 := func(r *slotstore.ClaimRequest) { r.MaxAttempts = 2 }
	only := func(r *slotstore.ClaimRequest) { r.TakeoverOnly = true }
	for _, tc := range []struct {
		name   string
		marker *slotstore.Marker
		req    slotstore.ClaimRequest
		want   slotstore.Decision
		status slotstore.Status
	}{
		{"no marker", nil, req(nil), slotstore.DecideWin, slotstore.Won},
		{"no marker, takeover only", nil, req(only), slotstore.DecideLose, slotstore.Absent},
		{"live lease", m(slotstore.StateRunning, live, 1), req(nil), slotstore.DecideLose, slotstore.Held},
		{"expired lease", m(slotstore.StateRunning, expired, 1), req(nil), slotstore.DecideWin, slotstore.Won},
		{"expired lease, takeover only", m(slotstore.StateRunning, expired, 1), req(only), slotstore.DecideWin, slotstore.Won},
		{"expired lease, on_crash skip", m(slotstore.StateRunning, expired, 1), req(skip), slotstore.DecideAbandon, slotstore.Abandoned},
		{"expired lease, attempts left", m(slotstore.StateRunning, expired, 1), req(max2), slotstore.DecideWin, slotstore.Won},
		{"expired lease, attempts spent", m(slotstore.StateRunning, expired, 2), req(max2), slotstore.DecideAbandon, slotstore.Abandoned},
		{"lease ends exactly now", m(slotstore.StateRunning, now, 1), req(nil), slotstore.DecideWin, slotstore.Won},
		{"released", m(slotstore.StateReleased, live, 5), req(max2), slotstore.DecideWin, slotstore.Won},
		{"done", m(slotstore.StateDone, expired, 1), req(nil), slotstore.DecideLose, slotstore.Finished},
		{"abandoned", m(slotstore.StateAbandoned, expired, 1), req(nil), slotstore.DecideLose, slotstore.Abandoned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := slotstore.Decide(tc.marker, tc.req, now)
			if d != tc.want {
				t.Fatalf("Decide = %v, want %v", d, tc.want)
			}
			var cur slotstore.Marker
			if tc.marker != nil {
				cur = *tc.marker
			}
			got, res := slotstore.Apply(d, cur, tc.req, "b", 8, now)
			if res.Status != tc.status {
				t.Errorf("status %v, want %v", res.Status, tc.status)
			}
			if res.Status == slotstore.Won {
				if got.Fence != 8 || got.Holder != "b" || got.Attempt != cur.Attempt+1 || !got.LeaseEnd.Equal(now.Add(time.Minute)) ||
					res.Claim.PrevHolder != cur.Holder || res.Err() != nil {
					t.Errorf("won marker %+v, claim %+v", got, res.Claim)
				}
			} else if !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
				t.Errorf("Err() = %v, want ErrSlotTaken", res.Err())
			}
			if res.Status == slotstore.Held && res.Remaining != time.Second {
				t.Errorf("remaining %v, want 1s", res.Remaining)
			}
		})
	}
}

func TestNormalizeAll(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	in := []slotstore.ClaimRequest{{Job: "j", Slot: time.Date(2026, 3, 29, 3, 0, 0, 999, berlin), Lease: time.Second}}
	out, err := slotstore.NormalizeAll(in)
	if err != nil {
		t.Fatal(err)
	}
	if r := out[0]; r.Slot.Location() != time.UTC || r.Slot.Nanosecond() != 0 || r.OnCrash != slotstore.OnCrashRetry || r.Retain != slotstore.DefaultRetain {
		t.Errorf("normalized %+v", r)
	}
	for _, bad := range []slotstore.ClaimRequest{
		{Slot: time.Now(), Lease: time.Second},
		{Job: "j", Lease: time.Second},
		{Job: "j", Slot: time.Now()},
		{Job: "j", Slot: time.Now(), Lease: time.Second, OnCrash: "explode"},
		{Job: "j", Slot: time.Now(), Lease: time.Second, MaxAttempts: -1},
	} {
		if _, err := slotstore.NormalizeAll(append(in, bad)); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestOutcomeUnknown(t *testing.T) {
	cause := errors.New("i/o timeout")
	err := slotstore.OutcomeUnknown("claim", cause)
	if !slotstore.IsOutcomeUnknown(err) || !errors.Is(err, cause) || errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("%v: unknown %v, cause %v", err, slotstore.IsOutcomeUnknown(err), errors.Is(err, cause))
	}
	if slotstore.IsOutcomeUnknown(cause) {
		t.Error("a plain error reads as outcome unknown")
	}
}
