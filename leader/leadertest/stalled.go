package leadertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// testStalledLeader stalls the leader's link to the store and checks that
// the leader's term is cancelled before its successor's begins, both read
// on this process's monotonic clock, and that the successor's fence is
// higher.
func testStalledLeader(t *testing.T, h Harness) {
	const lease = 500 * time.Millisecond
	name := nameFor(t)
	wa, wb := newWatch(), newWatch()
	a, stall := h.NewStallable(t, wa.logger())
	type ended struct {
		at    time.Time
		cause error
	}
	aTerms, aEnded := make(chan leader.Term, 1), make(chan ended, 1)
	lead(t, a, leader.Params{Name: name, Replica: "A", Lease: lease}, func(ctx context.Context, term leader.Term) {
		select {
		case aTerms <- term:
		default:
			return // a later term of A, if any, is not this test's
		}
		<-ctx.Done()
		aEnded <- ended{at: time.Now(), cause: context.Cause(ctx)}
	})
	aTerm := awaitTerm(t, aTerms, 5*time.Second)
	bTerms := make(chan leader.Term, 1)
	lead(t, h.New(t, wb.logger()), leader.Params{Name: name, Replica: "B", Lease: lease}, hold(bTerms, nil))
	wb.await(t, "waiting for the lease", 1, 5*time.Second)
	wa.await(t, "lease renewed", 1, 5*time.Second)

	stalledAt := time.Now()
	stall()
	bTerm := awaitTerm(t, bTerms, lease+5*time.Second)
	var end ended
	select {
	case end = <-aEnded:
	case <-time.After(slowBound):
		t.Fatalf("B's term began %v after the stall and A's term was never cancelled", bTerm.Start.Sub(stalledAt))
	}
	if !end.at.Before(bTerm.Start) {
		t.Fatalf("A's term was cancelled %v after B's began", end.at.Sub(bTerm.Start))
	}
	if !errors.Is(end.cause, leader.ErrNotRenewed) && !errors.Is(end.cause, leader.ErrLeaseLost) {
		t.Errorf("A's term ended with cause %v, want ErrNotRenewed or ErrLeaseLost", end.cause)
	}
	if bTerm.Fence <= aTerm.Fence {
		t.Errorf("B's fence %d is not above A's %d", bTerm.Fence, aTerm.Fence)
	}
	t.Logf("stall → A cancelled %v → B's term %v later (lease %v)",
		end.at.Sub(stalledAt).Round(time.Millisecond), bTerm.Start.Sub(end.at).Round(time.Millisecond), lease)
}
