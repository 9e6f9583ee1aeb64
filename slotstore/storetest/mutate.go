package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// mutations tries renew, finish and release of ref and returns their errors
// by name.
func mutations(t *testing.T, s slotstore.Store, ref slotstore.Ref) map[string]error {
	ctx := t.Context()
	return map[string]error{
		"renew":   s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: longLease}),
		"finish":  s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}),
		"release": s.Release(ctx, ref),
	}
}

// wantLost fails the test unless every mutation of ref fails with
// ErrLeaseLost and the marker of ref's slot stays as it was.
func wantLost(t *testing.T, s slotstore.Store, what string, ref slotstore.Ref) {
	t.Helper()
	before, had := find(t, s, ref.Job, ref.Slot)
	for op, err := range mutations(t, s, ref) {
		if !errors.Is(err, slotstore.ErrLeaseLost) {
			t.Errorf("%s of %s: %v, want ErrLeaseLost", op, what, err)
		}
	}
	after, has := find(t, s, ref.Job, ref.Slot)
	if had != has {
		t.Errorf("mutations of %s: marker existed %v, exists %v", what, had, has)
	}
	unchanged(t, "mutations of "+what, before, after)
}

// testStaleFence: the holder whose slot was taken over can change nothing.
func testStaleFence(t *testing.T, s slotstore.Store) {
	slot := slots(1)[0]
	old := mustWin(t, s, "r1", req("stale", slot, shortLease))
	cur := claimAfterExpiry(t, s, "r2", req("stale", slot, longLease))
	wantStatus(t, "takeover", cur, slotstore.Won)
	wantLost(t, s, "a claim taken over", old.Claim.Ref)
	if m := mustFind(t, s, "stale", slot); m.Holder != "r2" || m.Fence != cur.Claim.Fence || m.State != slotstore.StateRunning {
		t.Errorf("marker after stale mutations: %+v", m)
	}
	res := claimOne(t, s, "r3", req("stale", slot, longLease))
	wantStatus(t, "claim after stale mutations", res, slotstore.Held)
}

// testWrongFence: mutations with a fence the slot never had, of a slot never
// claimed, or of a finished slot fail and change nothing.
func testWrongFence(t *testing.T, s slotstore.Store) {
	sl := slots(3)
	live := mustWin(t, s, "r1", req("wrong", sl[0], longLease)).Claim
	for _, f := range []int64{live.Fence + 1, live.Fence + 1000} {
		ref := live.Ref
		ref.Fence = f
		wantLost(t, s, "a live claim with a wrong fence", ref)
	}
	wantStatus(t, "claim after wrong fences", claimOne(t, s, "r2", req("wrong", sl[0], longLease)), slotstore.Held)

	wantLost(t, s, "a slot never claimed", slotstore.Ref{Job: "wrong", Slot: sl[1], Fence: 1})
	if _, ok := find(t, s, "wrong", sl[1]); ok {
		t.Errorf("mutations of a slot never claimed created a marker")
	}

	done := mustWin(t, s, "r1", req("wrong", sl[2], longLease)).Claim
	err := s.Finish(t.Context(), slotstore.FinishParams{Ref: done.Ref, Outcome: slotstore.Failed, Error: "boom"})
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	before := mustFind(t, s, "wrong", sl[2])
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: done.Ref, Lease: longLease}); !errors.Is(err, slotstore.ErrFinished) {
		t.Errorf("renew of a finished slot: %v, want ErrFinished", err)
	}
	if err := s.Release(t.Context(), done.Ref); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("release of a finished slot: %v, want ErrLeaseLost", err)
	}
	stale := done.Ref
	stale.Fence++
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: stale, Outcome: slotstore.Succeeded}); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("finish of a finished slot with another fence: %v, want ErrLeaseLost", err)
	}
	// A second Finish under the same fence (a retry whose first reply was
	// lost) succeeds and changes nothing.
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: done.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Errorf("finish again under the same fence: %v, want nil", err)
	}
	m := mustFind(t, s, "wrong", sl[2])
	unchanged(t, "mutations of a finished slot", before, m)
	if m.State != slotstore.StateDone || m.Outcome != slotstore.Failed || m.Error != "boom" {
		t.Errorf("finished marker: %+v", m)
	}
}

// testTakeoverOnly: a takeover-only claim never creates a marker, and takes
// over an expired running slot like any claim.
func testTakeoverOnly(t *testing.T, s slotstore.Store) {
	sl := slots(3)
	r := req("tonly", sl[0], longLease)
	r.TakeoverOnly = true
	res := claimOne(t, s, "r1", r)
	wantStatus(t, "takeover-only claim of an unclaimed slot", res, slotstore.Absent)
	if _, ok := find(t, s, "tonly", sl[0]); ok {
		t.Errorf("a takeover-only claim created a marker")
	}

	first := mustWin(t, s, "r1", req("tonly", sl[1], shortLease))
	waitPast(t, s, first.Marker)
	r = req("tonly", sl[1], longLease)
	r.TakeoverOnly = true
	res = claimOne(t, s, "r2", r)
	wantStatus(t, "takeover-only claim of an expired slot", res, slotstore.Won)
	if res.Claim.Attempt != 2 || res.Claim.Fence <= first.Claim.Fence {
		t.Errorf("takeover-only claim: attempt %d fence %d after fence %d", res.Claim.Attempt, res.Claim.Fence, first.Claim.Fence)
	}
	wantStatus(t, "takeover-only claim of a held slot", claimOne(t, s, "r3", r), slotstore.Held)

	done := mustWin(t, s, "r1", req("tonly", sl[2], longLease))
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: done.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	r = req("tonly", sl[2], longLease)
	r.TakeoverOnly = true
	wantStatus(t, "takeover-only claim of a finished slot", claimOne(t, s, "r2", r), slotstore.Finished)
}

// testRenew: renewing keeps a lease alive past its original end, even when
// the renewal arrives after the lease ran out but before anyone else claimed.
func testRenew(t *testing.T, s slotstore.Store) {
	const lease = 300 * time.Millisecond
	sl := slots(2)
	r := req("renew", sl[0], lease)
	won := mustWin(t, s, "r1", r)
	start := time.Now()
	renewals := 0
	for time.Since(start) < 3*lease {
		if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: won.Claim.Ref, Lease: lease}); err != nil {
			t.Fatalf("renewal %d after %v: %v", renewals+1, time.Since(start), err)
		}
		renewals++
		res := claimOne(t, s, "r2", r)
		wantStatus(t, "competing claim after a renewal", res, slotstore.Held)
		if res.Marker.Holder != "r1" || res.Remaining <= 0 || res.Remaining > lease {
			t.Errorf("after renewal %d: holder %s, remaining %v", renewals, res.Marker.Holder, res.Remaining)
		}
		time.Sleep(lease / 3)
	}
	m := mustFind(t, s, "renew", sl[0])
	if !m.LeaseEnd.After(won.Marker.LeaseEnd) || m.Fence != won.Claim.Fence || m.Attempt != 1 || m.State != slotstore.StateRunning {
		t.Errorf("after %d renewals: marker %+v, first lease end %s", renewals, m, stamp(won.Marker.LeaseEnd))
	}

	late := mustWin(t, s, "r1", req("renew", sl[1], shortLease))
	waitPast(t, s, late.Marker)
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: late.Claim.Ref, Lease: longLease}); err != nil {
		t.Fatalf("renewal after expiry, before any other claim: %v", err)
	}
	wantStatus(t, "claim after a late renewal", claimOne(t, s, "r2", req("renew", sl[1], longLease)), slotstore.Held)
}

// testInvalidParams: bad parameters fail with ErrInvalid and change nothing.
func testInvalidParams(t *testing.T, s slotstore.Store) {
	slot := slots(1)[0]
	won := mustWin(t, s, "r1", req("invalid", slot, longLease))
	good := won.Claim.Ref
	before := mustFind(t, s, "invalid", slot)
	bad := map[string]slotstore.Ref{
		"empty job":      {Slot: slot, Fence: good.Fence},
		"zero slot":      {Job: "invalid", Fence: good.Fence},
		"zero fence":     {Job: "invalid", Slot: slot},
		"negative fence": {Job: "invalid", Slot: slot, Fence: -1},
	}
	for name, ref := range bad {
		for op, err := range mutations(t, s, ref) {
			if !errors.Is(err, slotstore.ErrInvalid) {
				t.Errorf("%s with %s: %v, want ErrInvalid", op, name, err)
			}
		}
	}
	ctx := t.Context()
	for _, lease := range []time.Duration{0, -time.Second} {
		if err := s.Renew(ctx, slotstore.RenewParams{Ref: good, Lease: lease}); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("renew with lease %v: %v, want ErrInvalid", lease, err)
		}
	}
	for _, o := range []slotstore.Outcome{"", "ok"} {
		if err := s.Finish(ctx, slotstore.FinishParams{Ref: good, Outcome: o}); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("finish with outcome %q: %v, want ErrInvalid", o, err)
		}
	}
	unchanged(t, "invalid mutations", before, mustFind(t, s, "invalid", slot))
}

// testClosed: every call after Close fails with ErrClosed.
func testClosed(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	r := req("closed", slots(1)[0], longLease)
	ref := mustWin(t, s, "r1", r).Claim.Ref
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{r}})
	errs := mutations(t, s, ref)
	errs["claim"] = err
	_, errs["history"] = s.History(ctx, slotstore.HistoryParams{})
	_, errs["prune"] = s.Prune(ctx)
	_, errs["skip"] = s.Skip(ctx, slotstore.SkipParams{Replica: "r1", Requests: []slotstore.SkipRequest{
		{Job: "closed", Slot: r.Slot.Add(time.Minute), Reason: "missed"},
	}})
	errs["set pause"] = s.SetPause(ctx, slotstore.PauseParams{Job: "closed", Paused: true})
	_, errs["pauses"] = s.Pauses(ctx)
	_, errs["enroll"] = s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"closed"}})
	_, errs["catalog"] = s.Catalog(ctx, slotstore.CatalogParams{})
	for op, err := range errs {
		if !errors.Is(err, slotstore.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", op, err)
		}
	}
	if err := s.Close(); err != nil && !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("second close: %v", err)
	}
}
