package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// testSkip: Skip records the slots without a marker as skipped, with their
// reason, leaves every other slot alone and answers for it as a losing
// claim would; no claim ever wins a skipped slot.
func testSkip(t *testing.T, s slotstore.Store) {
	const job = "skip"
	sl := slots(8)
	held := mustWin(t, s, "r1", req(job, sl[1], longLease))
	done := mustWin(t, s, "r1", req(job, sl[2], longLease))
	finish(t, s, slotstore.FinishParams{Ref: done.Claim.Ref, Outcome: slotstore.Succeeded})
	retrying := mustWin(t, s, "r1", req(job, sl[3], longLease))
	finish(t, s, slotstore.FinishParams{Ref: retrying.Claim.Ref, Outcome: slotstore.Failed, RetryAt: time.Now().Add(time.Hour)})
	released := mustWin(t, s, "r1", req(job, sl[5], longLease))
	if err := s.Release(t.Context(), released.Claim.Ref); err != nil {
		t.Fatal(err)
	}
	expired := mustWin(t, s, "r1", req(job, sl[6], shortLease))
	waitPast(t, s, expired.Marker)
	markers := map[int]slotstore.Marker{}
	for _, i := range []int{1, 2, 3, 5, 6} {
		markers[i] = mustFind(t, s, job, sl[i])
	}

	zone := time.FixedZone("UTC-03:30", -(3*3600 + 1800))
	reqs := []slotstore.SkipRequest{
		{Job: job, Slot: sl[0].Add(400 * time.Millisecond).In(zone), Reason: "missed"},
		{Job: job, Slot: sl[1], Reason: "missed"},
		{Job: job, Slot: sl[2], Reason: "missed"},
		{Job: job, Slot: sl[3], Reason: "missed"},
		{Job: job, Slot: sl[4], Reason: "catch_up", Retain: time.Hour},
		{Job: job, Slot: sl[0], Reason: "again"},
		{Job: job, Slot: sl[5], Reason: "missed"},
		{Job: job, Slot: sl[6], Reason: "missed"},
		{Job: "skip-other", Slot: sl[1], Reason: "missed"},
	}
	want := []slotstore.Status{
		slotstore.Skipped, slotstore.Held, slotstore.Finished, slotstore.Waiting, slotstore.Skipped, slotstore.Skipped,
		slotstore.Held, slotstore.Held, slotstore.Skipped,
	}
	before := time.Now()
	res, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r2", Requests: reqs})
	after := time.Now()
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("skip: %d results, %v", len(res), err)
	}
	for i, r := range res {
		what := fmt.Sprintf("skip entry %d", i)
		wantStatus(t, what, r, want[i])
		if slot := reqs[i].Slot.UTC().Truncate(time.Second); r.Marker.Job != reqs[i].Job || !r.Marker.Slot.Equal(slot) {
			t.Errorf("%s: marker of %s@%s, want %s@%s", what, r.Marker.Job, stamp(r.Marker.Slot), reqs[i].Job, stamp(slot))
		}
		if !errors.Is(r.Err(), slotstore.ErrSlotTaken) || r.Claim.Fence != 0 {
			t.Errorf("%s: Err() = %v, claim %+v", what, r.Err(), r.Claim)
		}
	}
	checkSkipped(t, "skipped slot", res[0].Marker, job, sl[0], "r2", "missed", before, after)
	checkSkipped(t, "skipped slot with a retention", res[4].Marker, job, sl[4], "r2", "catch_up", before, after)
	if want := sl[0].Add(rules.DefaultRetain); !res[0].Marker.KeepUntil.Equal(want) {
		t.Errorf("skipped slot kept until %s, want %s", stamp(res[0].Marker.KeepUntil), stamp(want))
	}
	if want := sl[4].Add(time.Hour); !res[4].Marker.KeepUntil.Equal(want) {
		t.Errorf("skipped slot kept until %s, want %s", stamp(res[4].Marker.KeepUntil), stamp(want))
	}
	unchanged(t, "a second skip in the batch", res[0].Marker, res[5].Marker)
	if m := res[1].Marker; m.Holder != "r1" || m.Fence != held.Claim.Fence || res[1].Remaining <= 0 || res[1].Remaining > longLease {
		t.Errorf("skip of a held slot: marker %+v, remaining %v", m, res[1].Remaining)
	}
	if r := res[3]; r.Remaining <= time.Hour-time.Minute || r.Remaining > time.Hour {
		t.Errorf("skip of a retrying slot: remaining %v, want about an hour", r.Remaining)
	}
	for _, i := range []int{6, 7} {
		if res[i].Remaining != 0 {
			t.Errorf("skip entry %d (released or expired): remaining %v, want 0", i, res[i].Remaining)
		}
	}
	for i, slot := range map[int]int{1: 1, 2: 2, 3: 3, 6: 5, 7: 6} {
		unchanged(t, fmt.Sprintf("skip entry %d", i), markers[slot], res[i].Marker)
		unchanged(t, fmt.Sprintf("skip entry %d", i), markers[slot], mustFind(t, s, job, sl[slot]))
	}
	unchanged(t, "skip", res[0].Marker, mustFind(t, s, job, sl[0]))

	// No claim wins a skipped slot: it is final.
	for _, r := range []slotstore.ClaimRequest{
		req(job, sl[0], longLease), overlapReq(job, sl[0], longLease, policy.OverlapReplace),
		{Job: job, Slot: sl[4], Lease: longLease, TakeoverOnly: true},
	} {
		wantStatus(t, fmt.Sprintf("claim %+v of a skipped slot", r), claimOne(t, s, "r3", r), slotstore.Skipped)
	}
	// A released or expired slot is still claimed as before.
	wantStatus(t, "claim of a released slot after a skip", claimOne(t, s, "r3", req(job, sl[5], longLease)), slotstore.Won)
	wantStatus(t, "claim of an expired slot after a skip", claimOne(t, s, "r3", req(job, sl[6], longLease)), slotstore.Won)

	res, err = s.Skip(t.Context(), slotstore.SkipParams{Replica: "r2"})
	if err != nil || len(res) != 0 {
		t.Errorf("empty skip batch: %v, %v", res, err)
	}
}

// testSkipInvalid: one bad request fails the whole Skip batch and changes
// nothing.
func testSkipInvalid(t *testing.T, s slotstore.Store) {
	sl := slots(2)
	good := func(i int) slotstore.SkipRequest {
		return slotstore.SkipRequest{Job: "sv", Slot: sl[i], Reason: "missed"}
	}
	bad := []struct {
		name string
		r    slotstore.SkipRequest
	}{
		{"empty job", slotstore.SkipRequest{Slot: sl[0], Reason: "missed"}},
		{"zero slot", slotstore.SkipRequest{Job: "sv", Reason: "missed"}},
		{"empty reason", slotstore.SkipRequest{Job: "sv", Slot: sl[0]}},
	}
	for i, b := range bad {
		batch := slices.Insert([]slotstore.SkipRequest{good(0), good(1)}, i%3, b.r)
		res, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r1", Requests: batch})
		if !errors.Is(err, slotstore.ErrInvalid) || res != nil {
			t.Errorf("%s: got %v, %v; want no results and ErrInvalid", b.name, res, err)
		}
	}
	if ms, err := s.History(t.Context(), slotstore.HistoryParams{}); err != nil || len(ms) != 0 {
		t.Fatalf("history after invalid skips: %v, %v; want none", ms, err)
	}
	for i := range 2 {
		mustWin(t, s, "r2", req("sv", sl[i], longLease))
	}
}
