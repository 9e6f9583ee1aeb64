package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// retryDelay is how far ahead the retry tests ask for their retries.
const retryDelay = 200 * time.Millisecond

// testRetry: a failed run that asks for a retry waits in state retrying;
// claims before the retry is due change nothing, and the first claim after
// wins with attempt+1 and a higher fence, whatever its OnCrash and
// MaxAttempts; only Finish under the same fence succeeds, changing nothing.
func testRetry(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	const job = "retry"
	slot := slots(1)[0]
	r := req(job, slot, longLease)
	first := mustWin(t, s, "r1", r)

	before := time.Now()
	retryAt := before.Add(retryDelay)
	failed := slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: slotstore.Failed, Error: "boom", Duration: 5 * time.Millisecond, RetryAt: retryAt}
	finish(t, s, failed)
	after := time.Now()
	m := mustFind(t, s, job, slot)
	if m.State != slotstore.StateRetrying || m.Holder != "r1" || m.Fence != first.Claim.Fence || m.Attempt != 1 ||
		m.Outcome != slotstore.Failed || m.Error != "boom" || m.Duration != 5*time.Millisecond {
		t.Errorf("retrying marker %+v", m)
	}
	if d := m.LeaseEnd.Sub(retryAt); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("retrying marker: lease end %s, want the retry's %s", stamp(m.LeaseEnd), stamp(retryAt))
	}
	within(t, "retrying marker: finished at", m.FinishedAt, before, after)

	// Before the retry is due: Waiting, and nothing changes.
	res := claimOne(t, s, "r2", r)
	if res.Status == slotstore.Waiting {
		if res.Remaining <= 0 || res.Remaining > retryDelay+slack {
			t.Errorf("waiting claim: remaining %v, want in (0, %v]", res.Remaining, retryDelay)
		}
		if !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
			t.Errorf("waiting claim: Err() = %v, want ErrSlotTaken", res.Err())
		}
		unchanged(t, "a waiting claim", m, res.Marker)
	} else if time.Now().Before(retryAt) {
		t.Fatalf("claim before the retry is due: status %v, want waiting", res.Status)
	}
	// The failed holder may finish again; it may not renew or release.
	for _, o := range []slotstore.Outcome{slotstore.Failed, slotstore.Succeeded} {
		if err := s.Finish(ctx, slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: o}); err != nil {
			t.Errorf("finish of a retrying slot again, %s: %v, want nil", o, err)
		}
	}
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: first.Claim.Ref, Lease: longLease}); !errors.Is(err, slotstore.ErrFinished) {
		t.Errorf("renew of a retrying slot: %v, want ErrFinished", err)
	}
	if err := s.Release(ctx, first.Claim.Ref); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("release of a retrying slot: %v, want ErrLeaseLost", err)
	}
	stale := first.Claim.Ref
	stale.Fence++
	if err := s.Finish(ctx, slotstore.FinishParams{Ref: stale, Outcome: slotstore.Failed}); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("finish of a retrying slot with another fence: %v, want ErrLeaseLost", err)
	}
	unchanged(t, "mutations of a retrying slot", m, mustFind(t, s, job, slot))

	// Once due, the retry is won, whatever OnCrash and MaxAttempts say.
	strict := r
	strict.OnCrash, strict.MaxAttempts = policy.OnCrashSkip, 1
	second := claimAfterExpiry(t, s, "r2", strict)
	wantStatus(t, "claim of a due retry", second, slotstore.Won)
	checkWon(t, second, "r2", strict)
	if c := second.Claim; c.Attempt != 2 || c.Fence <= first.Claim.Fence || c.PrevHolder != "r1" || !c.Retry {
		t.Errorf("retry claim %+v, want attempt 2, a higher fence, previous holder r1, retry", c)
	}
	if second.Marker.ClaimedAt.Before(retryAt.Add(-slack)) {
		t.Errorf("retry claimed at %s, before it was due at %s", stamp(second.Marker.ClaimedAt), stamp(retryAt))
	}
	wantLost(t, s, "the failed claim after its retry was claimed", first.Claim.Ref)

	// A timed-out run may be retried too, and a takeover-only claim takes
	// a due retry.
	finish(t, s, slotstore.FinishParams{Ref: second.Claim.Ref, Outcome: slotstore.TimedOut, RetryAt: time.Now().Add(retryDelay)})
	only := r
	only.TakeoverOnly = true
	third := claimAfterExpiry(t, s, "r3", only)
	wantStatus(t, "takeover-only claim of a due retry", third, slotstore.Won)
	if c := third.Claim; c.Attempt != 3 || c.Fence <= second.Claim.Fence || c.PrevHolder != "r2" || !c.Retry {
		t.Errorf("third attempt %+v", c)
	}

	// A retry of a run that succeeded is refused; a retry due in the past
	// is due at once.
	before3 := mustFind(t, s, job, slot)
	err := s.Finish(ctx, slotstore.FinishParams{Ref: third.Claim.Ref, Outcome: slotstore.Succeeded, RetryAt: time.Now()})
	if !errors.Is(err, slotstore.ErrInvalid) {
		t.Errorf("finish succeeded with a retry: %v, want ErrInvalid", err)
	}
	unchanged(t, "an invalid finish", before3, mustFind(t, s, job, slot))
	finish(t, s, slotstore.FinishParams{Ref: third.Claim.Ref, Outcome: slotstore.Failed, RetryAt: time.Now().Add(-time.Hour)})
	fourth := claimOne(t, s, "r1", r)
	wantStatus(t, "claim of a retry due an hour ago", fourth, slotstore.Won)
	if c := fourth.Claim; c.Attempt != 4 || !c.Retry {
		t.Errorf("fourth attempt %+v", c)
	}
	finish(t, s, slotstore.FinishParams{Ref: fourth.Claim.Ref, Outcome: slotstore.Succeeded})
	wantStatus(t, "claim after the retry succeeded", claimOne(t, s, "r2", r), slotstore.Finished)
	if m := mustFind(t, s, job, slot); m.State != slotstore.StateDone || m.Outcome != slotstore.Succeeded || m.Attempt != 4 || m.Error != "" {
		t.Errorf("marker after the retry succeeded: %+v", m)
	}
}
