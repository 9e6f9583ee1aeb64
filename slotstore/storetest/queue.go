package storetest

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// testOverlapQueueCrash: a running slot whose lease expired holds a queue
// claim back only while a takeover may still win it: not with on_crash
// skip, nor once its attempts are spent. Within a batch, a takeover of the
// crashed slot made before the queue claim holds it back for its lease.
func testOverlapQueueCrash(t *testing.T, s slotstore.Store) {
	sl := slots(3)
	queue := func(job string, i int, lease time.Duration, onCrash policy.OnCrash, attempts int) slotstore.ClaimRequest {
		r := overlapReq(job, sl[i], lease, policy.OverlapQueue)
		r.OnCrash, r.MaxAttempts = onCrash, attempts
		return r
	}

	// With on_crash skip, a crashed holder's slot is abandoned, never
	// taken over: it does not hold the claim back.
	skip := func(i int, lease time.Duration) slotstore.ClaimRequest {
		return queue("qc-skip", i, lease, policy.OnCrashSkip, 0)
	}
	crashed := mustWin(t, s, "r1", skip(0, shortLease))
	waitPast(t, s, crashed.Marker)
	mustWin(t, s, "r2", skip(1, longLease))
	unchanged(t, "a claim beside a crashed holder with on_crash skip", crashed.Marker, mustFind(t, s, "qc-skip", sl[0]))

	// With attempts left, the crashed holder holds the claim back; once
	// they are spent, it does not.
	spent := func(i int, lease time.Duration) slotstore.ClaimRequest {
		return queue("qc-spent", i, lease, policy.OnCrashRetry, 2)
	}
	crashed = mustWin(t, s, "r1", spent(0, shortLease))
	waitPast(t, s, crashed.Marker)
	wantQueued(t, "queue claim behind a crashed holder, attempts left", claimOne(t, s, "r2", spent(1, longLease)),
		"qc-spent", sl[1], 0, 0)
	noMarker(t, "a queued claim behind a crashed holder", s, "qc-spent", sl[1])
	again := claimOne(t, s, "r3", spent(0, shortLease))
	wantStatus(t, "takeover of the crashed slot", again, slotstore.Won)
	if again.Claim.Attempt != 2 {
		t.Errorf("takeover: attempt %d, want 2", again.Claim.Attempt)
	}
	waitPast(t, s, again.Marker)
	mustWin(t, s, "r2", spent(1, longLease))
	unchanged(t, "a claim beside a crashed holder with attempts spent", again.Marker, mustFind(t, s, "qc-spent", sl[0]))

	// In one batch: the queue claim before the takeover waits for no time,
	// the one after it for the takeover's lease.
	retry := func(i int, lease time.Duration) slotstore.ClaimRequest {
		return queue("qc-batch", i, lease, policy.OnCrashRetry, 0)
	}
	crashed = mustWin(t, s, "r1", retry(0, shortLease))
	waitPast(t, s, crashed.Marker)
	start := time.Now()
	reqs := []slotstore.ClaimRequest{retry(1, longLease), retry(0, longLease), retry(2, longLease)}
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r2", Requests: reqs})
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("batch: %d results, %v", len(res), err)
	}
	wantQueued(t, "queue claim before the takeover in a batch", res[0], "qc-batch", sl[1], 0, 0)
	wantStatus(t, "takeover in a batch", res[1], slotstore.Won)
	wantQueued(t, "queue claim after the takeover in a batch", res[2], "qc-batch", sl[2], longLease-time.Since(start)-slack, longLease)
	noMarker(t, "a queued claim in a batch", s, "qc-batch", sl[1])
	noMarker(t, "a queued claim in a batch", s, "qc-batch", sl[2])
}
