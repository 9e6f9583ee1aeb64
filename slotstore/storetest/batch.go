package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// testFences: fences grow per job across slots, takeovers, releases and the
// entries of a batch; another job's fences count on their own.
func testFences(t *testing.T, s slotstore.Store) {
	sl := slots(12)
	fences := map[string][]int64{}
	record := func(res slotstore.ClaimResult) {
		fences[res.Claim.Job] = append(fences[res.Claim.Job], res.Claim.Fence)
	}
	record(mustWin(t, s, "r1", req("a", sl[0], shortLease)))
	record(mustWin(t, s, "r1", req("b", sl[0], longLease)))
	rel := mustWin(t, s, "r1", req("a", sl[1], longLease))
	record(rel)

	takeover := claimAfterExpiry(t, s, "r2", req("a", sl[0], longLease))
	wantStatus(t, "takeover", takeover, slotstore.Won)
	record(takeover)
	if err := s.Release(t.Context(), rel.Claim.Ref); err != nil {
		t.Fatalf("release: %v", err)
	}
	record(mustWin(t, s, "r3", req("a", sl[1], longLease)))

	var batch []slotstore.ClaimRequest
	for _, slot := range sl[2:] {
		batch = append(batch, req("a", slot, longLease), req("b", slot, longLease))
	}
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: batch})
	if err != nil || len(res) != len(batch) {
		t.Fatalf("batch: %d results, %v", len(res), err)
	}
	for i, r := range res {
		wantStatus(t, fmt.Sprintf("batch entry %d", i), r, slotstore.Won)
		record(r)
	}
	increasing(t, "a", fences["a"])
	increasing(t, "b", fences["b"])
}

// testBatchOrder: a large batch answers in request order.
func testBatchOrder(t *testing.T, s slotstore.Store) {
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1"})
	if err != nil || len(res) != 0 {
		t.Fatalf("empty batch: %v, %v", res, err)
	}

	const n = 500
	jobs := []string{"x", "y", "z"}
	sl := slots(n)
	reqs := make([]slotstore.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = req(jobs[i%len(jobs)], sl[i], longLease)
	}
	res, err = s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: reqs})
	if err != nil {
		t.Fatalf("claim %d slots: %v", n, err)
	}
	if len(res) != n {
		t.Fatalf("claim %d slots: %d results", n, len(res))
	}
	last := map[string]int64{}
	for i, r := range res {
		wantStatus(t, fmt.Sprintf("entry %d", i), r, slotstore.Won)
		checkWon(t, r, "r1", reqs[i])
		if r.Claim.Attempt != 1 || r.Claim.PrevHolder != "" || r.Claim.Takeover() {
			t.Errorf("entry %d: first claim %+v", i, r.Claim)
		}
		if r.Claim.Fence <= last[r.Claim.Job] {
			t.Errorf("entry %d: fence %d of %s after %d", i, r.Claim.Fence, r.Claim.Job, last[r.Claim.Job])
		}
		last[r.Claim.Job] = r.Claim.Fence
	}

	all, err := s.History(t.Context(), slotstore.HistoryParams{})
	if err != nil || len(all) != 100 {
		t.Fatalf("history with the default limit: %d markers, %v; want 100", len(all), err)
	}
	if !all[0].Slot.Equal(sl[n-1]) || !all[99].Slot.Equal(sl[n-100]) {
		t.Errorf("history with the default limit spans %s..%s, want %s..%s",
			stamp(all[0].Slot), stamp(all[99].Slot), stamp(sl[n-1]), stamp(sl[n-100]))
	}
	x, err := s.History(t.Context(), slotstore.HistoryParams{Job: "x", Limit: n})
	if want := (n + 2) / 3; err != nil || len(x) != want {
		t.Errorf("history of x: %d markers, %v; want %d", len(x), err, want)
	}
}

// testBatchMixed: each entry of a batch gets its own status.
func testBatchMixed(t *testing.T, s slotstore.Store) {
	sl := slots(6)
	mustWin(t, s, "other", req("m", sl[0], longLease))
	done := mustWin(t, s, "other", req("m", sl[1], longLease))
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: done.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	rel := mustWin(t, s, "other", req("m", sl[2], longLease))
	if err := s.Release(t.Context(), rel.Claim.Ref); err != nil {
		t.Fatalf("release: %v", err)
	}
	mustWin(t, s, "other", req("m", sl[3], shortLease))
	waitPast(t, s, mustWin(t, s, "other", req("m", sl[4], shortLease)).Marker)

	skip := req("m", sl[4], longLease)
	skip.OnCrash = policy.OnCrashSkip
	reqs := []slotstore.ClaimRequest{
		req("m", sl[5], longLease), req("m", sl[0], longLease), req("m", sl[1], longLease),
		req("m", sl[2], longLease), req("m", sl[3], longLease), skip, req("m", sl[5], longLease),
	}
	want := []slotstore.Status{
		slotstore.Won, slotstore.Held, slotstore.Finished, slotstore.Won, slotstore.Won, slotstore.Abandoned, slotstore.Held,
	}
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "me", Requests: reqs})
	after := time.Now()
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("batch: %d results, %v", len(res), err)
	}
	var fences []int64
	for i, r := range res {
		wantStatus(t, fmt.Sprintf("entry %d (%s)", i, stamp(reqs[i].Slot)), r, want[i])
		// Read before the answer left the store: not after it came back,
		// by this host's clock, which the test's stores share.
		if !r.Answered.IsZero() && (r.Answered.After(after) || !r.Answered.Equal(res[0].Answered)) {
			t.Errorf("entry %d answered at %s, after the answer came back at %s, or not at the batch's %s", i,
				stamp(r.Answered), stamp(after), stamp(res[0].Answered))
		}
		if !r.Marker.Slot.Equal(reqs[i].Slot) {
			t.Errorf("entry %d: marker of %s, want %s", i, stamp(r.Marker.Slot), stamp(reqs[i].Slot))
		}
		if r.Status == slotstore.Won {
			checkWon(t, r, "me", reqs[i])
			fences = append(fences, r.Claim.Fence)
		}
	}
	increasing(t, "m", fences)
	if c := res[0].Claim; c.Attempt != 1 || c.PrevHolder != "" {
		t.Errorf("first claim: %+v", c)
	}
	for _, i := range []int{3, 4} {
		if c := res[i].Claim; c.Attempt != 2 || c.PrevHolder != "other" {
			t.Errorf("entry %d: claim %+v, want attempt 2 after other", i, c)
		}
	}
	if m := res[1].Marker; m.Holder != "other" || res[1].Remaining <= 0 {
		t.Errorf("held entry: marker %+v, remaining %v", m, res[1].Remaining)
	}
	if m := res[5].Marker; m.State != slotstore.StateAbandoned || m.Holder != "other" {
		t.Errorf("abandoned entry: marker %+v", m)
	}
	if m := res[6].Marker; m.Holder != "me" || m.Fence != res[0].Claim.Fence || res[6].Remaining > longLease {
		t.Errorf("entry held by the same batch: marker %+v, remaining %v", m, res[6].Remaining)
	}
}

// testBatchInvalid: one bad request fails the whole batch and changes
// nothing.
func testBatchInvalid(t *testing.T, s slotstore.Store) {
	sl := slots(2)
	good := func(i int) slotstore.ClaimRequest { return req("v", sl[i], longLease) }
	bad := []struct {
		name string
		r    slotstore.ClaimRequest
	}{
		{"empty job", slotstore.ClaimRequest{Slot: sl[0], Lease: longLease}},
		{"zero slot", slotstore.ClaimRequest{Job: "v", Lease: longLease}},
		{"zero lease", slotstore.ClaimRequest{Job: "v", Slot: sl[0]}},
		{"negative lease", slotstore.ClaimRequest{Job: "v", Slot: sl[0], Lease: -time.Second}},
		{"bad on_crash", slotstore.ClaimRequest{Job: "v", Slot: sl[0], Lease: longLease, OnCrash: "sometimes"}},
		{"negative max attempts", slotstore.ClaimRequest{Job: "v", Slot: sl[0], Lease: longLease, MaxAttempts: -1}},
		{"bad overlap", slotstore.ClaimRequest{Job: "v", Slot: sl[0], Lease: longLease, Overlap: "never"}},
	}
	for i, b := range bad {
		// The bad request comes first, between or last.
		batch := slices.Insert([]slotstore.ClaimRequest{good(0), good(1)}, i%3, b.r)
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: batch})
		if !errors.Is(err, slotstore.ErrInvalid) || res != nil {
			t.Errorf("%s: got %v, %v; want no results and ErrInvalid", b.name, res, err)
		}
	}
	if ms, err := s.History(t.Context(), slotstore.HistoryParams{}); err != nil || len(ms) != 0 {
		t.Fatalf("history after invalid batches: %v, %v; want none", ms, err)
	}
	for i := range 2 {
		if c := mustWin(t, s, "r2", good(i)).Claim; c.Attempt != 1 || c.PrevHolder != "" {
			t.Errorf("slot %d after invalid batches: %+v, want a first claim", i, c)
		}
	}
}
