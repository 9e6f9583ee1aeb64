package storetest

import (
	"errors"
	"testing"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// testTakeover: once a running slot's lease expires, the next claim takes it
// over with attempt+1 and a higher fence.
func testTakeover(t *testing.T, s slotstore.Store) {
	r := req("takeover", slots(1)[0], shortLease)
	first := mustWin(t, s, "r1", r)
	res := claimAfterExpiry(t, s, "r2", r)
	wantStatus(t, "claim after expiry", res, slotstore.Won)
	checkWon(t, res, "r2", r)
	c := res.Claim
	if c.Attempt != 2 || c.Fence <= first.Claim.Fence || c.PrevHolder != "r1" || !c.Takeover() {
		t.Errorf("takeover of %+v: %+v, want attempt 2, a higher fence, previous holder r1", first.Claim, c)
	}
	if res.Marker.ClaimedAt.Before(first.Marker.LeaseEnd) {
		t.Errorf("taken over at %s, before the lease ended at %s", stamp(res.Marker.ClaimedAt), stamp(first.Marker.LeaseEnd))
	}
	if m := mustFind(t, s, r.Job, r.Slot); m.Holder != "r2" || m.Fence != c.Fence || m.Attempt != 2 || m.State != slotstore.StateRunning {
		t.Errorf("history after takeover: %+v", m)
	}
}

// testOnCrashSkip: with OnCrash skip an expired slot is abandoned, and stays
// so.
func testOnCrashSkip(t *testing.T, s slotstore.Store) {
	r := req("skip", slots(1)[0], shortLease)
	r.OnCrash = policy.OnCrashSkip
	first := mustWin(t, s, "r1", r)
	res := claimAfterExpiry(t, s, "r2", r)
	wantStatus(t, "claim after expiry", res, slotstore.Abandoned)
	if m := res.Marker; m.State != slotstore.StateAbandoned || m.Holder != "r1" || m.Fence != first.Claim.Fence ||
		m.Reason != rules.ReasonOnCrashSkip || m.FinishedAt.IsZero() {
		t.Errorf("abandoned marker: %+v", m)
	}
	if !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
		t.Errorf("Err() = %v, want ErrSlotTaken", res.Err())
	}
	retry := req("skip", r.Slot, longLease)
	wantStatus(t, "later claim with on_crash retry", claimOne(t, s, "r3", retry), slotstore.Abandoned)
	wantStatus(t, "later claim with on_crash skip", claimOne(t, s, "r3", r), slotstore.Abandoned)
	err := s.Finish(t.Context(), slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: slotstore.Succeeded})
	if !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("finish of an abandoned slot: %v, want ErrLeaseLost", err)
	}
	if m := mustFind(t, s, r.Job, r.Slot); m.State != slotstore.StateAbandoned || m.Outcome != "" || m.Reason != rules.ReasonOnCrashSkip {
		t.Errorf("history: %+v", m)
	}
}

// testMaxAttempts: the takeover that would exceed MaxAttempts abandons the
// slot instead.
func testMaxAttempts(t *testing.T, s slotstore.Store) {
	r := req("attempts", slots(1)[0], shortLease)
	r.MaxAttempts = 2
	mustWin(t, s, "r1", r)
	second := claimAfterExpiry(t, s, "r2", r)
	wantStatus(t, "second attempt", second, slotstore.Won)
	if second.Claim.Attempt != 2 {
		t.Errorf("second attempt: %+v", second.Claim)
	}
	third := claimAfterExpiry(t, s, "r3", r)
	wantStatus(t, "third attempt", third, slotstore.Abandoned)
	if m := third.Marker; m.State != slotstore.StateAbandoned || m.Attempt != 2 || m.Holder != "r2" || m.Reason != rules.ReasonMaxAttempts {
		t.Errorf("abandoned marker: %+v", m)
	}
	wantStatus(t, "later claim", claimOne(t, s, "r4", r), slotstore.Abandoned)
}

// testRelease: a released slot can be claimed at once, with attempt+1 and a
// higher fence, and is never refused, even past MaxAttempts.
func testRelease(t *testing.T, s slotstore.Store) {
	r := req("release", slots(1)[0], longLease)
	r.MaxAttempts = 1
	first := mustWin(t, s, "r1", r)
	if err := s.Release(t.Context(), first.Claim.Ref); err != nil {
		t.Fatalf("release: %v", err)
	}
	if m := mustFind(t, s, r.Job, r.Slot); m.State != slotstore.StateReleased || m.Holder != "r1" || m.Fence != first.Claim.Fence {
		t.Errorf("released marker: %+v", m)
	}
	second := mustWin(t, s, "r2", r)
	if c := second.Claim; c.Attempt != 2 || c.Fence <= first.Claim.Fence || c.PrevHolder != "r1" {
		t.Errorf("claim after release: %+v, want attempt 2, a higher fence, previous holder r1", c)
	}
	if err := s.Release(t.Context(), first.Claim.Ref); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("second release of the first claim: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(t.Context(), second.Claim.Ref); err != nil {
		t.Fatalf("release of the second claim: %v", err)
	}
	third := mustWin(t, s, "r3", r)
	if c := third.Claim; c.Attempt != 3 || c.Fence <= second.Claim.Fence || c.PrevHolder != "r2" {
		t.Errorf("claim after two releases: %+v, want attempt 3 after r2", c)
	}
}
