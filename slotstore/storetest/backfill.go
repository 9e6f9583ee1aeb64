package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// missedDown is the reason the engine gives a slot no replica was up to run.
const missedDown = "missed: down"

// backfillReq is req for a Backfill claim.
func backfillReq(job string, slot time.Time, lease time.Duration) slotstore.ClaimRequest {
	r := req(job, slot, lease)
	r.Backfill = true
	return r
}

// skipMissed records job@slot skipped as missed while every replica was
// down, and returns its marker.
func skipMissed(t *testing.T, s slotstore.Store, job string, slot time.Time) slotstore.Marker {
	t.Helper()
	res := skipOne(t, s, "r0", slotstore.SkipRequest{Job: job, Slot: slot, Reason: missedDown})
	wantStatus(t, "skip "+job+"@"+stamp(slot), res, slotstore.Skipped)
	if res.Marker.Reason != missedDown {
		t.Fatalf("skip %s@%s: marker %+v", job, stamp(slot), res.Marker)
	}
	return res.Marker
}

// testBackfill: a Backfill claim wins a slot recorded skipped as missed as
// a first claim wins a slot: attempt 1, a fence above every fence of the
// job, a marker with nothing of the skip left and marked Backfill, a mark
// its takeovers keep; the slot then runs once, like any other. An ordinary claim of a skipped slot still loses, no claim
// wins a slot skipped for data loss, and a Backfill claim of a slot with
// no marker is an ordinary claim.
func testBackfill(t *testing.T, s slotstore.Store) {
	const job = "backfill"
	sl := slots(6)
	enroll(t, s, job)
	first := mustWin(t, s, "r1", req(job, sl[0], longLease))
	finish(t, s, slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: slotstore.Succeeded})
	later := mustWin(t, s, "r1", req(job, sl[5], longLease))
	skipped := skipMissed(t, s, job, sl[1])

	// An ordinary claim, even a manual one, loses a skipped slot and
	// changes nothing; so does a Backfill claim before its NotBefore.
	for _, r := range []slotstore.ClaimRequest{req(job, sl[1], longLease), {Job: job, Slot: sl[1], Lease: longLease, Manual: true}} {
		res := claimOne(t, s, "r2", r)
		wantStatus(t, "ordinary claim of a skipped slot", res, slotstore.Skipped)
		unchanged(t, "ordinary claim of a skipped slot", skipped, res.Marker)
	}
	early := backfillReq(job, sl[1], longLease)
	early.NotBefore = never
	if res := claimOne(t, s, "r2", early); res.Status != slotstore.NotYet || res.Remaining <= 0 {
		t.Errorf("backfill before its NotBefore: %v, remaining %v; want not yet", res.Status, res.Remaining)
	}
	unchanged(t, "backfill before its NotBefore", skipped, mustFind(t, s, job, sl[1]))

	r := backfillReq(job, sl[1], longLease)
	r.Retain, r.Manual = time.Hour, true
	r.NotBefore = time.Now().Add(-time.Minute)
	before := time.Now()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r2", Incarnation: "i2", Requests: []slotstore.ClaimRequest{r}})
	after := time.Now()
	if err != nil || len(res) != 1 {
		t.Fatalf("backfill: %v, %v", res, err)
	}
	won := res[0]
	wantStatus(t, "backfill of a missed slot", won, slotstore.Won)
	checkWon(t, won, "r2", r)
	if c := won.Claim; c.Attempt != 1 || c.PrevHolder != "" || c.Retry || c.Takeover() {
		t.Errorf("backfill claim %+v, want attempt 1 and no previous holder, as a first claim", c)
	}
	if won.Claim.Fence <= max(first.Claim.Fence, later.Claim.Fence) {
		t.Errorf("backfill fence %d, want above the job's fences %d and %d", won.Claim.Fence, first.Claim.Fence, later.Claim.Fence)
	}
	m := won.Marker
	if m.Manual || !m.Backfill || m.Incarnation != "i2" || !m.KeepUntil.Equal(sl[1].Add(time.Hour)) || m.Attempt != 1 {
		t.Errorf("backfilled marker %+v: want not manual, backfill, incarnation i2, kept until %s, attempt 1", m,
			stamp(sl[1].Add(time.Hour)))
	}
	if first.Marker.Backfill || later.Marker.Backfill || mustFind(t, s, job, sl[0]).Backfill {
		t.Errorf("ordinary claims' markers %+v, %+v: want no backfill mark", first.Marker, later.Marker)
	}
	within(t, "backfilled at", m.ClaimedAt, before, after)
	if d := m.LeaseEnd.Sub(m.ClaimedAt); d < longLease-time.Millisecond || d > longLease+time.Millisecond {
		t.Errorf("backfilled marker: lease of %v, want %v", d, longLease)
	}
	got := mustFind(t, s, job, sl[1])
	unchanged(t, "history of the backfilled slot", m, got)
	if got.Incarnation != "i2" || !got.KeepUntil.Equal(m.KeepUntil) {
		t.Errorf("history of the backfilled slot: %+v, want %+v", got, m)
	}

	// It runs once: a second Backfill claim finds it held, and once
	// finished it is final, for a backfill too.
	again := claimOne(t, s, "r3", backfillReq(job, sl[1], longLease))
	wantStatus(t, "second backfill", again, slotstore.Held)
	if again.Remaining <= 0 || again.Remaining > longLease || again.Marker.Fence != won.Claim.Fence || again.Marker.Holder != "r2" {
		t.Errorf("second backfill: remaining %v, marker %+v", again.Remaining, again.Marker)
	}
	finish(t, s, slotstore.FinishParams{Ref: won.Claim.Ref, Outcome: slotstore.Succeeded})
	done := mustFind(t, s, job, sl[1])
	for _, r := range []slotstore.ClaimRequest{backfillReq(job, sl[1], longLease), req(job, sl[1], longLease)} {
		res := claimOne(t, s, "r3", r)
		wantStatus(t, "claim of a backfilled slot that finished", res, slotstore.Finished)
		unchanged(t, "claim of a backfilled slot that finished", done, res.Marker)
	}
	skipRes := skipOne(t, s, "r3", slotstore.SkipRequest{Job: job, Slot: sl[1], Reason: missedDown})
	wantStatus(t, "skip of a backfilled slot that finished", skipRes, slotstore.Finished)

	// A slot skipped for data loss may have run before the loss.
	old := enroll(t, s, job)[0].Born.Add(-time.Minute).UTC().Truncate(time.Second)
	loss := claimOne(t, s, "r1", req(job, old, longLease))
	if loss.Status != slotstore.Skipped || loss.Marker.Reason != slotstore.ReasonDataLoss {
		t.Fatalf("claim of a slot older than the generation: %v %+v", loss.Status, loss.Marker)
	}
	res2 := claimOne(t, s, "r2", backfillReq(job, old, longLease))
	wantStatus(t, "backfill of a slot skipped for data loss", res2, slotstore.Skipped)
	unchanged(t, "backfill of a slot skipped for data loss", loss.Marker, mustFind(t, s, job, old))

	// A slot with no marker is claimed as usual.
	fresh := mustWin(t, s, "r2", backfillReq(job, sl[2], longLease))
	if fresh.Claim.Attempt != 1 || fresh.Claim.Fence <= won.Claim.Fence || !fresh.Marker.Backfill {
		t.Errorf("backfill of a slot with no marker: %+v, marker %+v", fresh.Claim, fresh.Marker)
	}
	// A takeover of a backfilled slot keeps its mark, as the history does.
	short := mustWin(t, s, "r2", backfillReq(job, sl[4], shortLease))
	took := claimAfterExpiry(t, s, "r3", req(job, sl[4], longLease))
	if took.Status != slotstore.Won || took.Claim.Attempt != 2 || !took.Marker.Backfill || !mustFind(t, s, job, sl[4]).Backfill {
		t.Errorf("takeover of a backfilled slot %+v: %v %+v, want won, attempt 2, backfill kept", short.Claim, took.Status, took.Marker)
	}
	finish(t, s, slotstore.FinishParams{Ref: took.Claim.Ref, Outcome: slotstore.Succeeded})
	// Any reason but data loss will do: a slot skipped for overlap too.
	finish(t, s, slotstore.FinishParams{Ref: later.Claim.Ref, Outcome: slotstore.Succeeded})
	over := claimOne(t, s, "r1", overlapReq(job, sl[3], longLease, policy.OverlapForbid))
	if over.Status != slotstore.Skipped || over.Marker.Reason != slotstore.ReasonOverlap {
		t.Fatalf("forbid claim while another slot runs: %v %+v", over.Status, over.Marker)
	}
	finish(t, s, slotstore.FinishParams{Ref: fresh.Claim.Ref, Outcome: slotstore.Succeeded})
	mustWin(t, s, "r2", backfillReq(job, sl[3], longLease))

}

// testBackfillRetention: once the store's clock has reached Slot + Retain,
// a Backfill claim is a takeover-only claim: of a slot with no marker it
// creates none and answers Absent, whether or not the generation covers the
// slot; of a skipped slot it loses and changes nothing; an expired lease it
// takes over as any claim does. Alone and in one batch alike.
func testBackfillRetention(t *testing.T, s slotstore.Store) {
	const (
		job  = "backfill-retention"
		tiny = time.Millisecond
	)
	born := enroll(t, s, job)[0].Born
	// Slots of the generation, which the store's clock passes below, and
	// one older than it.
	first := born.UTC().Truncate(time.Second).Add(time.Second)
	none, skipped, held := first, first.Add(time.Second), first.Add(2*time.Second)
	old := born.UTC().Truncate(time.Second).Add(-time.Minute)
	skip := skipMissed(t, s, job, skipped) // kept for the default retention
	taken := mustWin(t, s, "r1", req(job, held, shortLease))
	waitStoreTime(t, s, job+"-clock", held.Add(tiny))
	backfill := func(slot time.Time) slotstore.ClaimRequest {
		r := backfillReq(job, slot, longLease)
		r.Retain, r.NotBefore = tiny, slot
		return r
	}
	absent := func(what string, res slotstore.ClaimResult, slot time.Time) {
		t.Helper()
		wantStatus(t, what, res, slotstore.Absent)
		if m, ok := find(t, s, job, slot); ok {
			t.Errorf("%s created %+v", what, m)
		}
	}

	absent("backfill past its retention of a slot with no marker", claimOne(t, s, "r2", backfill(none)), none)
	absent("backfill past its retention of a slot older than the generation", claimOne(t, s, "r2", backfill(old)), old)
	res := claimOne(t, s, "r2", backfill(skipped))
	wantStatus(t, "backfill past its retention of a skipped slot", res, slotstore.Skipped)
	unchanged(t, "backfill past its retention of a skipped slot", skip, res.Marker)
	unchanged(t, "backfill past its retention of a skipped slot", skip, mustFind(t, s, job, skipped))

	waitPast(t, s, taken.Marker)
	batch, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r3", Requests: []slotstore.ClaimRequest{
		backfill(none), backfill(skipped), backfill(held), backfill(old),
	}})
	if err != nil || len(batch) != 4 {
		t.Fatalf("batch of backfills past their retention: %v, %v", batch, err)
	}
	absent("backfill past its retention of a slot with no marker, in a batch", batch[0], none)
	wantStatus(t, "backfill past its retention of a skipped slot, in a batch", batch[1], slotstore.Skipped)
	unchanged(t, "backfill past its retention of a skipped slot, in a batch", skip, mustFind(t, s, job, skipped))
	wantStatus(t, "backfill past its retention of an expired lease", batch[2], slotstore.Won)
	checkWon(t, batch[2], "r3", backfill(held))
	if c := batch[2].Claim; c.Attempt != 2 || c.PrevHolder != "r1" || c.Fence <= taken.Claim.Fence {
		t.Errorf("backfill past its retention of an expired lease: %+v, want a takeover of %+v", c, taken.Claim)
	}
	absent("backfill past its retention of a slot older than the generation, in a batch", batch[3], old)
}

// testBackfillForbid: a Backfill claim with forbid while another slot of
// the job runs under a live lease, even one won earlier in its batch,
// changes nothing and answers Skipped; a lease that expired does not count.
func testBackfillForbid(t *testing.T, s slotstore.Store) {
	const job = "backfill-forbid"
	sl := slots(6)
	enroll(t, s, job)
	forbid := func(i int) slotstore.ClaimRequest {
		r := backfillReq(job, sl[i], longLease)
		r.Overlap = policy.OverlapForbid
		return r
	}
	running := mustWin(t, s, "r1", req(job, sl[0], longLease))
	skipped := skipMissed(t, s, job, sl[1])
	res := claimOne(t, s, "r2", forbid(1))
	wantStatus(t, "backfill with forbid while another slot runs", res, slotstore.Skipped)
	unchanged(t, "backfill with forbid while another slot runs", skipped, res.Marker)
	unchanged(t, "backfill with forbid while another slot runs", skipped, mustFind(t, s, job, sl[1]))
	if res.Marker.Reason != missedDown || res.Marker.Holder != "r0" || !res.Marker.ClaimedAt.Equal(skipped.ClaimedAt) {
		t.Errorf("backfill with forbid while another slot runs: marker %+v, want %+v", res.Marker, skipped)
	}
	// Allow is not checked.
	skipMissed(t, s, job, sl[2])
	mustWin(t, s, "r2", backfillReq(job, sl[2], longLease))

	// A slot won earlier in the batch runs too.
	finish(t, s, slotstore.FinishParams{Ref: running.Claim.Ref, Outcome: slotstore.Succeeded})
	finish(t, s, slotstore.FinishParams{Ref: mustFind(t, s, job, sl[2]).Ref(), Outcome: slotstore.Succeeded})
	skipMissed(t, s, job, sl[3])
	batch, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
		req(job, sl[4], shortLease), forbid(3),
	}})
	if err != nil || len(batch) != 2 {
		t.Fatalf("batch: %v, %v", batch, err)
	}
	wantStatus(t, "claim in the batch", batch[0], slotstore.Won)
	wantStatus(t, "backfill with forbid after it in the batch", batch[1], slotstore.Skipped)
	if batch[1].Marker.Reason != missedDown {
		t.Errorf("backfill with forbid after a win in the batch: marker %+v", batch[1].Marker)
	}

	// Once the other slot's lease expired, the backfill wins.
	waitPast(t, s, batch[0].Marker)
	res = claimOne(t, s, "r2", forbid(3))
	wantStatus(t, "backfill with forbid once the other lease expired", res, slotstore.Won)
	if res.Claim.Attempt != 1 || res.Claim.Fence <= batch[0].Claim.Fence {
		t.Errorf("backfill with forbid once the other lease expired: %+v", res.Claim)
	}
	// Now the backfilled slot runs: a forbid backfill of another is
	// skipped.
	skipMissed(t, s, job, sl[5])
	wantStatus(t, "backfill with forbid while a backfilled slot runs", claimOne(t, s, "r3", forbid(5)), slotstore.Skipped)
}

// testBackfillInvalid: a Backfill claim with overlap replace, or of a term,
// fails its batch with ErrInvalid and changes nothing.
func testBackfillInvalid(t *testing.T, s slotstore.Store) {
	const job = "backfill-invalid"
	sl := slots(2)
	enroll(t, s, job)
	skipped := skipMissed(t, s, job, sl[0])
	replace := backfillReq(job, sl[0], longLease)
	replace.Overlap = policy.OverlapReplace
	term := backfillReq(job, sl[0], longLease)
	term.Term = true
	for name, bad := range map[string]slotstore.ClaimRequest{"overlap replace": replace, "a term": term} {
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
			backfillReq(job, sl[1], longLease), bad,
		}})
		if !errors.Is(err, slotstore.ErrInvalid) || res != nil {
			t.Errorf("backfill with %s: %v, %v; want no results and ErrInvalid", name, res, err)
		}
	}
	unchanged(t, "invalid backfills", skipped, mustFind(t, s, job, sl[0]))
	if m, ok := find(t, s, job, sl[1]); ok {
		t.Errorf("an invalid batch created %+v", m)
	}
	mustWin(t, s, "r1", backfillReq(job, sl[0], longLease))
}

// testBackfillConcurrent: replicas that backfill one skipped slot at the
// same moment: exactly one wins, the others find it held.
func testBackfillConcurrent(t *testing.T, s slotstore.Store) {
	const (
		job      = "backfill-race"
		claimers = 16
	)
	enroll(t, s, job)
	for _, slot := range slots(2) {
		skipMissed(t, s, job, slot)
		r := backfillReq(job, slot, longLease)
		results, errs := claimAtOnce(t, s, claimers, r)
		winner := -1
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("slot %s: backfill by r%02d: %v", stamp(slot), i, errs[i])
			}
			switch res.Status {
			case slotstore.Won:
				if winner >= 0 {
					t.Fatalf("slot %s: r%02d and r%02d both backfilled it", stamp(slot), winner, i)
				}
				winner = i
				checkWon(t, res, fmt.Sprintf("r%02d", i), r)
			case slotstore.Held:
			default:
				t.Errorf("slot %s: r%02d got %v, want won or held", stamp(slot), i, res.Status)
			}
		}
		if winner < 0 {
			t.Fatalf("slot %s: no backfill won", stamp(slot))
		}
		for i, res := range results {
			if res.Status == slotstore.Held && res.Marker.Fence != results[winner].Claim.Fence {
				t.Errorf("slot %s: r%02d held under fence %d, want the winner's %d", stamp(slot), i, res.Marker.Fence, results[winner].Claim.Fence)
			}
		}
	}
}

// testBackfillGeneration: a slot recorded skipped before its job's
// generation began is not backfilled, nor is a slot older than the
// generation, whenever it was skipped. A Skip begins no generation, so the
// generation of a job first skipped begins at its first claim, after the
// skip.
func testBackfillGeneration(t *testing.T, s slotstore.Store) {
	const job = "backfill-gen"
	slot := slots(1)[0]
	skipped := skipMissed(t, s, job, slot)
	// The claim below begins the generation strictly after the skip.
	waitStoreTime(t, s, job+"-clock", skipped.ClaimedAt.Add(10*time.Millisecond))
	res := claimOne(t, s, "r1", backfillReq(job, slot, longLease))
	wantStatus(t, "backfill of a slot skipped before the generation", res, slotstore.Skipped)
	unchanged(t, "backfill of a slot skipped before the generation", skipped, mustFind(t, s, job, slot))
	born := enroll(t, s, job)[0].Born
	if !born.After(skipped.ClaimedAt) {
		t.Fatalf("generation born %s, not after the skip at %s", stamp(born), stamp(skipped.ClaimedAt))
	}
	// A slot older than the generation may have run before it began (the
	// store may have lost its marker), however late its skip was recorded.
	old := born.Add(-time.Minute).UTC().Truncate(time.Second)
	oldSkip := skipOne(t, s, "r0", slotstore.SkipRequest{Job: job, Slot: old, Reason: "missed: store unavailable"})
	wantStatus(t, "skip of a slot older than the generation", oldSkip, slotstore.Skipped)
	if oldSkip.Marker.ClaimedAt.Before(born) {
		t.Fatalf("skip recorded at %s, before the generation born %s", stamp(oldSkip.Marker.ClaimedAt), stamp(born))
	}
	res = claimOne(t, s, "r1", backfillReq(job, old, longLease))
	wantStatus(t, "backfill of a slot older than the generation, skipped since", res, slotstore.Skipped)
	unchanged(t, "backfill of a slot older than the generation, skipped since", oldSkip.Marker, mustFind(t, s, job, old))
	// A slot skipped since is backfilled.
	next := slot.Add(time.Minute)
	skipMissed(t, s, job, next)
	mustWin(t, s, "r1", backfillReq(job, next, longLease))
}
