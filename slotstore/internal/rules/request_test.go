package rules_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

func TestNormalizeClaims(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	in := []slotstore.ClaimRequest{{Job: "j", Slot: time.Date(2026, 3, 29, 3, 0, 0, 999, berlin), Lease: time.Second}}
	out, err := rules.NormalizeClaims(in)
	if err != nil {
		t.Fatal(err)
	}
	if r := out[0]; r.Slot.Location() != time.UTC || r.Slot.Nanosecond() != 0 || r.OnCrash != policy.OnCrashRetry ||
		r.Retain != rules.DefaultRetain || r.Overlap != policy.OverlapAllow {
		t.Errorf("normalized %+v", r)
	}
	for _, bad := range []slotstore.ClaimRequest{
		{Slot: time.Now(), Lease: time.Second},
		{Job: "j", Lease: time.Second},
		{Job: "j", Slot: time.Now()},
		{Job: "j", Slot: time.Now(), Lease: time.Second, OnCrash: "explode"},
		{Job: "j", Slot: time.Now(), Lease: time.Second, MaxAttempts: -1},
		{Job: "j", Slot: time.Now(), Lease: time.Second, Overlap: "sometimes"},
	} {
		if _, err := rules.NormalizeClaims(append(in, bad)); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestOutcomeUnknown(t *testing.T) {
	cause := errors.New("i/o timeout")
	err := rules.OutcomeUnknown("claim", cause)
	if !errors.Is(err, slotstore.ErrOutcomeUnknown) || !errors.Is(err, cause) || errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("%v: unknown %v, cause %v", err, errors.Is(err, slotstore.ErrOutcomeUnknown), errors.Is(err, cause))
	}
	if errors.Is(cause, slotstore.ErrOutcomeUnknown) {
		t.Error("a plain error reads as outcome unknown")
	}
}

func TestFinishRetryValidate(t *testing.T) {
	ref := slotstore.Ref{Job: "j", Slot: time.Now(), Fence: 1}
	later := time.Now().Add(time.Second)
	for o, ok := range map[slotstore.Outcome]bool{slotstore.Failed: true, slotstore.TimedOut: true, slotstore.Succeeded: false} {
		err := rules.ValidateFinish(slotstore.FinishParams{Ref: ref, Outcome: o, RetryAt: later})
		if (err == nil) != ok || (err != nil && !errors.Is(err, slotstore.ErrInvalid)) {
			t.Errorf("finish %s with a retry: %v", o, err)
		}
	}
}

// A retrying marker is kept like a running one until its retry is due.
func TestPrunable(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	for _, tc := range []struct {
		state    slotstore.State
		keep     time.Time
		leaseEnd time.Time
		want     bool
	}{
		{slotstore.StateDone, now.Add(-time.Second), now.Add(time.Hour), true},
		{slotstore.StateDone, now, now, false},
		{slotstore.StateRunning, now.Add(-time.Second), now.Add(time.Second), false},
		{slotstore.StateRunning, now.Add(-time.Second), now, true},
		{slotstore.StateRetrying, now.Add(-time.Second), now.Add(time.Second), false},
		{slotstore.StateRetrying, now.Add(-time.Second), now, true},
		{slotstore.StateSkipped, now.Add(-time.Second), now.Add(time.Hour), true},
	} {
		m := slotstore.Marker{State: tc.state, KeepUntil: tc.keep, LeaseEnd: tc.leaseEnd}
		if got := rules.Prunable(m, now); got != tc.want {
			t.Errorf("%s kept until %v, lease end %v: prunable %v, want %v", tc.state, tc.keep, tc.leaseEnd, got, tc.want)
		}
	}
}
