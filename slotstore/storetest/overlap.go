package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// overlapReq is req with an overlap policy.
func overlapReq(job string, slot time.Time, lease time.Duration, o policy.Overlap) slotstore.ClaimRequest {
	r := req(job, slot, lease)
	r.Overlap = o
	return r
}

// checkSkipped checks a marker recorded skipped by replica at a time between
// lo and hi.
func checkSkipped(t *testing.T, what string, m slotstore.Marker, job string, slot time.Time, replica, reason string, lo, hi time.Time) {
	t.Helper()
	if m.Job != job || !m.Slot.Equal(slot) || m.State != slotstore.StateSkipped || m.Reason != reason ||
		m.Holder != replica || m.Fence != 0 || m.Attempt != 0 || m.Outcome != "" {
		t.Errorf("%s: marker %+v, want %s@%s skipped by %s for %q, fence 0, attempt 0", what, m, job, stamp(slot), replica, reason)
	}
	within(t, what+": finished at", m.FinishedAt, lo, hi)
}

// testOverlapForbid: a first claim with forbid is recorded skipped while
// another slot of the job runs under a live lease, and only then.
func testOverlapForbid(t *testing.T, s slotstore.Store) {
	const job = "forbid"
	sl := slots(6)
	forbid := func(i int, lease time.Duration) slotstore.ClaimRequest {
		return overlapReq(job, sl[i], lease, policy.OverlapForbid)
	}
	first := mustWin(t, s, "r1", forbid(0, longLease))

	before := time.Now()
	res := claimOne(t, s, "r2", forbid(1, longLease))
	after := time.Now()
	wantStatus(t, "forbid claim while another slot runs", res, slotstore.Skipped)
	checkSkipped(t, "forbid claim while another slot runs", res.Marker, job, sl[1], "r2", slotstore.ReasonOverlap, before, after)
	if want := sl[1].Add(rules.DefaultRetain); !res.Marker.KeepUntil.Equal(want) {
		t.Errorf("skipped marker kept until %s, want %s", stamp(res.Marker.KeepUntil), stamp(want))
	}
	if !errors.Is(res.Err(), slotstore.ErrSlotTaken) || res.Claim.Fence != 0 {
		t.Errorf("skipped claim: Err() = %v, claim %+v", res.Err(), res.Claim)
	}
	unchanged(t, "the skipped claim", res.Marker, mustFind(t, s, job, sl[1]))
	// A skipped slot is final, for every claim.
	wantStatus(t, "later claim of the skipped slot", claimOne(t, s, "r3", req(job, sl[1], longLease)), slotstore.Skipped)

	// Takeover-only claims create nothing, so they are never skipped.
	only := forbid(2, longLease)
	only.TakeoverOnly = true
	wantStatus(t, "takeover-only forbid claim", claimOne(t, s, "r2", only), slotstore.Absent)
	// Claims that allow overlap are not checked; other jobs do not count.
	allowed := mustWin(t, s, "r1", req(job, sl[2], longLease))
	mustWin(t, s, "r1", overlapReq("forbid-other", sl[1], longLease, policy.OverlapForbid))

	// Once nothing runs the forbid claim wins, with a fence above the ones
	// before: the skip issued none.
	finish(t, s, slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: slotstore.Succeeded})
	wantStatus(t, "forbid claim while the allow claim runs", claimOne(t, s, "r2", forbid(5, longLease)), slotstore.Skipped)
	finish(t, s, slotstore.FinishParams{Ref: allowed.Claim.Ref, Outcome: slotstore.Failed})
	expiring := mustWin(t, s, "r2", forbid(3, shortLease))
	if expiring.Claim.Fence <= allowed.Claim.Fence {
		t.Errorf("fence %d after fence %d", expiring.Claim.Fence, allowed.Claim.Fence)
	}

	// A running slot whose lease expired does not count.
	waitPast(t, s, expiring.Marker)
	live := mustWin(t, s, "r3", forbid(4, longLease))
	// A takeover is not checked: the expired slot is taken over although
	// another runs.
	takeover := claimOne(t, s, "r3", forbid(3, longLease))
	wantStatus(t, "takeover with forbid while another slot runs", takeover, slotstore.Won)
	if c := takeover.Claim; c.Attempt != 2 || c.PrevHolder != "r2" || c.Fence <= live.Claim.Fence {
		t.Errorf("takeover: %+v", c)
	}
}

// testOverlapForbidBatch: a slot won earlier in a batch counts as running
// for the forbid claims after it.
func testOverlapForbidBatch(t *testing.T, s slotstore.Store) {
	sl := slots(4)
	f := func(job string, i int) slotstore.ClaimRequest {
		return overlapReq(job, sl[i], longLease, policy.OverlapForbid)
	}
	reqs := []slotstore.ClaimRequest{
		f("fb", 0), f("fb-other", 0), f("fb", 1), req("fb-allow", sl[0], longLease), f("fb", 2), f("fb-allow", 1), f("fb-other", 0),
	}
	want := []slotstore.Status{
		slotstore.Won, slotstore.Won, slotstore.Skipped, slotstore.Won, slotstore.Skipped, slotstore.Skipped, slotstore.Held,
	}
	before := time.Now()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: reqs})
	after := time.Now()
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("batch: %d results, %v", len(res), err)
	}
	for i, r := range res {
		what := fmt.Sprintf("entry %d (%s@%s)", i, reqs[i].Job, stamp(reqs[i].Slot))
		wantStatus(t, what, r, want[i])
		if r.Status == slotstore.Skipped {
			checkSkipped(t, what, r.Marker, reqs[i].Job, reqs[i].Slot, "r1", slotstore.ReasonOverlap, before, after)
			unchanged(t, what, r.Marker, mustFind(t, s, reqs[i].Job, reqs[i].Slot))
		}
	}
	// The skipped slots stay skipped, and the won ones running.
	again, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r2", Requests: reqs})
	if err != nil || len(again) != len(reqs) {
		t.Fatalf("second batch: %d results, %v", len(again), err)
	}
	for i, r := range again {
		w := want[i]
		if w == slotstore.Won {
			w = slotstore.Held
		}
		wantStatus(t, fmt.Sprintf("second batch, entry %d", i), r, w)
	}
}

// testOverlapReplace: a first claim with replace supersedes every other
// running slot of the job, whose holders then change nothing.
func testOverlapReplace(t *testing.T, s slotstore.Store) {
	const job = "replace"
	sl := slots(5)
	a := mustWin(t, s, "r1", req(job, sl[0], longLease))
	b := mustWin(t, s, "r1", req(job, sl[1], shortLease))
	done := mustWin(t, s, "r1", req(job, sl[2], longLease))
	finish(t, s, slotstore.FinishParams{Ref: done.Claim.Ref, Outcome: slotstore.Succeeded})
	doneBefore := mustFind(t, s, job, sl[2])
	waitPast(t, s, b.Marker) // b's lease expired; it is still running

	before := time.Now()
	r := overlapReq(job, sl[3], longLease, policy.OverlapReplace)
	res := claimOne(t, s, "r2", r)
	after := time.Now()
	wantStatus(t, "replace claim", res, slotstore.Won)
	checkWon(t, res, "r2", r)
	if want := []slotstore.Ref{a.Claim.Ref, b.Claim.Ref}; !sameRefs(res.Replaced, want) {
		t.Errorf("replaced %v, want %v", res.Replaced, want)
	}
	if res.Claim.Fence <= b.Claim.Fence {
		t.Errorf("replace claim: fence %d after fence %d", res.Claim.Fence, b.Claim.Fence)
	}
	reason := rules.ReasonReplacedBy + sl[3].Format(time.RFC3339)
	for _, old := range []slotstore.ClaimResult{a, b} {
		m := mustFind(t, s, job, old.Claim.Slot)
		if m.State != slotstore.StateReplaced || m.Reason != reason || m.Holder != "r1" || m.Fence != old.Claim.Fence ||
			m.Attempt != 1 || !m.LeaseEnd.Equal(m.FinishedAt) || m.Outcome != "" {
			t.Errorf("replaced marker %+v, want reason %q, fence %d, lease ended when finished", m, reason, old.Claim.Fence)
		}
		within(t, "replaced at", m.FinishedAt, before, after)
		wantLost(t, s, "a replaced claim", old.Claim.Ref)
		// Replaced is final.
		wantStatus(t, "claim of a replaced slot", claimOne(t, s, "r3", req(job, old.Claim.Slot, longLease)), slotstore.Finished)
	}
	unchanged(t, "the replace claim", doneBefore, mustFind(t, s, job, sl[2]))

	// With nothing else running, nothing is replaced.
	finish(t, s, slotstore.FinishParams{Ref: res.Claim.Ref, Outcome: slotstore.Succeeded})
	res = claimOne(t, s, "r2", overlapReq(job, sl[4], longLease, policy.OverlapReplace))
	wantStatus(t, "replace claim with nothing running", res, slotstore.Won)
	if len(res.Replaced) != 0 {
		t.Errorf("replace claim with nothing running replaced %v", res.Replaced)
	}
}

// testOverlapReplaceBatch: a replace claim supersedes a slot won earlier in
// the same batch; a takeover with replace supersedes nothing.
func testOverlapReplaceBatch(t *testing.T, s slotstore.Store) {
	sl := slots(4)
	rep := func(job string, i int, lease time.Duration) slotstore.ClaimRequest {
		return overlapReq(job, sl[i], lease, policy.OverlapReplace)
	}
	reqs := []slotstore.ClaimRequest{rep("rb", 0, longLease), req("rb-other", sl[0], longLease), rep("rb", 1, longLease)}
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: reqs})
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("batch: %d results, %v", len(res), err)
	}
	for i, r := range res {
		wantStatus(t, fmt.Sprintf("entry %d", i), r, slotstore.Won)
		checkWon(t, r, "r1", reqs[i])
	}
	if len(res[0].Replaced) != 0 || len(res[1].Replaced) != 0 {
		t.Errorf("first claims replaced %v and %v", res[0].Replaced, res[1].Replaced)
	}
	if want := []slotstore.Ref{res[0].Claim.Ref}; !sameRefs(res[2].Replaced, want) {
		t.Errorf("second replace claim replaced %v, want %v", res[2].Replaced, want)
	}
	if m := mustFind(t, s, "rb", sl[0]); m.State != slotstore.StateReplaced {
		t.Errorf("marker replaced in the batch: %+v", m)
	}
	if m := mustFind(t, s, "rb-other", sl[0]); m.State != slotstore.StateRunning {
		t.Errorf("another job's marker: %+v", m)
	}

	// A takeover is not checked for overlap.
	expiring := mustWin(t, s, "r1", req("rt", sl[2], shortLease))
	live := mustWin(t, s, "r1", req("rt", sl[3], longLease))
	res2 := claimAfterExpiry(t, s, "r2", rep("rt", 2, longLease))
	wantStatus(t, "takeover with replace", res2, slotstore.Won)
	if res2.Claim.Attempt != 2 || len(res2.Replaced) != 0 || res2.Claim.Fence <= expiring.Claim.Fence {
		t.Errorf("takeover with replace: claim %+v, replaced %v", res2.Claim, res2.Replaced)
	}
	if m := mustFind(t, s, "rt", sl[3]); m.State != slotstore.StateRunning || m.Fence != live.Claim.Fence {
		t.Errorf("the other running slot after a takeover with replace: %+v", m)
	}
}

// testOverlapQueue: a first claim with queue changes nothing while another
// slot of the job runs under a live lease, answering Queued with the least
// time left on those leases; once none runs, the same claim wins.
func testOverlapQueue(t *testing.T, s slotstore.Store) {
	const job = "queue"
	sl := slots(5)
	queue := func(i int, lease time.Duration) slotstore.ClaimRequest {
		return overlapReq(job, sl[i], lease, policy.OverlapQueue)
	}
	start := time.Now()
	first := mustWin(t, s, "r1", queue(0, longLease))
	res := claimOne(t, s, "r2", queue(1, longLease))
	wantQueued(t, "queue claim while another slot runs", res, job, sl[1], longLease-time.Since(start)-slack, longLease)
	noMarker(t, "a queued claim", s, job, sl[1])
	unchanged(t, "a queued claim", first.Marker, mustFind(t, s, job, sl[0]))

	// The least time left counts: a shorter lease beside the first.
	start = time.Now()
	mid := mustWin(t, s, "r1", req(job, sl[2], patience))
	res = claimOne(t, s, "r2", queue(1, longLease))
	wantQueued(t, "queue claim while two slots run", res, job, sl[1], patience-time.Since(start)-slack, patience)
	noMarker(t, "a second queued claim", s, job, sl[1])

	// Takeover-only claims create nothing, so they never queue; other jobs
	// do not count.
	only := queue(3, longLease)
	only.TakeoverOnly = true
	wantStatus(t, "takeover-only queue claim", claimOne(t, s, "r2", only), slotstore.Absent)
	mustWin(t, s, "r1", overlapReq("queue-other", sl[1], longLease, policy.OverlapQueue))

	// Before its NotBefore a claim is not yet due, whatever runs.
	early := queue(3, longLease)
	early.NotBefore = time.Now().Add(time.Hour)
	if res := claimOne(t, s, "r2", early); res.Status != slotstore.NotYet || res.Remaining <= 0 {
		t.Errorf("early queue claim: %v, remaining %v; want not yet", res.Status, res.Remaining)
	}
	noMarker(t, "an early queue claim", s, job, sl[3])
	// A slot older than the job's generation is skipped for data loss.
	lost := queue(0, longLease)
	lost.Slot = time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	before := time.Now()
	res = claimOne(t, s, "r2", lost)
	wantStatus(t, "queue claim of a slot older than the generation", res, slotstore.Skipped)
	checkSkipped(t, "queue claim of a slot older than the generation", res.Marker, job, lost.Slot, "r2",
		slotstore.ReasonDataLoss, before, time.Now())

	// Once the runs end the queued claim wins, with a fence above the ones
	// before: the queued claims issued none.
	finish(t, s, slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: slotstore.Succeeded})
	finish(t, s, slotstore.FinishParams{Ref: mid.Claim.Ref, Outcome: slotstore.Succeeded})
	won := mustWin(t, s, "r2", queue(1, shortLease))
	if won.Claim.Fence <= mid.Claim.Fence || mid.Claim.Fence <= first.Claim.Fence {
		t.Errorf("fences %d, %d, %d do not grow", first.Claim.Fence, mid.Claim.Fence, won.Claim.Fence)
	}

	// A running slot whose holder crashed (its lease expired, and a
	// takeover may still win it) holds a claim back, for no time: it may
	// run again at any moment.
	waitPast(t, s, won.Marker)
	res = claimOne(t, s, "r3", queue(3, longLease))
	wantQueued(t, "queue claim behind a crashed holder", res, job, sl[3], 0, 0)
	noMarker(t, "a queued claim behind a crashed holder", s, job, sl[3])
	unchanged(t, "a queued claim behind a crashed holder", won.Marker, mustFind(t, s, job, sl[1]))

	// A takeover is not checked, even while another slot runs.
	live := mustWin(t, s, "r3", req(job, sl[4], longLease))
	start = time.Now()
	takeover := claimOne(t, s, "r3", queue(1, longLease))
	wantStatus(t, "takeover with queue while another slot runs", takeover, slotstore.Won)
	if c := takeover.Claim; c.Attempt != 2 || c.PrevHolder != "r2" || c.Fence <= live.Claim.Fence {
		t.Errorf("takeover: %+v", c)
	}

	// The queued claim waits for the takeover's run, and wins once it and
	// the other have ended.
	res = claimOne(t, s, "r2", queue(3, longLease))
	wantQueued(t, "queue claim behind a takeover", res, job, sl[3], longLease-time.Since(start)-slack, longLease)
	finish(t, s, slotstore.FinishParams{Ref: takeover.Claim.Ref, Outcome: slotstore.Succeeded})
	finish(t, s, slotstore.FinishParams{Ref: live.Claim.Ref, Outcome: slotstore.Succeeded})
	mustWin(t, s, "r2", queue(3, longLease))
}

// testOverlapQueueBatch: a slot won earlier in a batch counts as running
// for the queue claims after it.
func testOverlapQueueBatch(t *testing.T, s slotstore.Store) {
	sl := slots(3)
	q := func(job string, i int) slotstore.ClaimRequest {
		return overlapReq(job, sl[i], longLease, policy.OverlapQueue)
	}
	reqs := []slotstore.ClaimRequest{
		q("qb", 0), q("qb-other", 0), q("qb", 1), req("qb-allow", sl[0], longLease), q("qb", 2), q("qb-allow", 1),
	}
	want := []slotstore.Status{
		slotstore.Won, slotstore.Won, slotstore.Queued, slotstore.Won, slotstore.Queued, slotstore.Queued,
	}
	start := time.Now()
	for _, replica := range []string{"r1", "r2"} {
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: reqs})
		if err != nil || len(res) != len(reqs) {
			t.Fatalf("batch by %s: %d results, %v", replica, len(res), err)
		}
		for i, r := range res {
			what := fmt.Sprintf("batch by %s, entry %d (%s@%s)", replica, i, reqs[i].Job, stamp(reqs[i].Slot))
			switch {
			case want[i] == slotstore.Queued:
				wantQueued(t, what, r, reqs[i].Job, reqs[i].Slot, longLease-time.Since(start)-slack, longLease)
				noMarker(t, what, s, reqs[i].Job, reqs[i].Slot)
			case replica == "r1":
				wantStatus(t, what, r, slotstore.Won)
				checkWon(t, r, replica, reqs[i])
			default:
				// The won slots stay running, held by the first batch.
				wantStatus(t, what, r, slotstore.Held)
			}
		}
	}
}
