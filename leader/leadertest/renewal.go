package leadertest

import (
	"context"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// testRenewal checks that a leader keeps its term across many leases while
// another replica campaigns, and that the follower wins, with a higher
// fence, once the leader resigns.
func testRenewal(t *testing.T, h Harness) {
	const lease = 600 * time.Millisecond
	name := nameFor(t)
	wa, wb := newWatch(), newWatch()
	aTerms, bTerms := make(chan leader.Term, 4), make(chan leader.Term, 4)
	release := make(chan struct{})
	cancelled := make(chan error, 1)
	fnA := func(ctx context.Context, term leader.Term) {
		aTerms <- term
		select {
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
		case <-release:
		}
	}
	lead(t, h.New(t, wa.logger()), leader.Params{Name: name, Replica: "A", Lease: lease}, fnA)
	a := awaitTerm(t, aTerms, 5*time.Second)
	lead(t, h.New(t, wb.logger()), leader.Params{Name: name, Replica: "B", Lease: lease}, hold(bTerms, nil))
	wb.await(t, "waiting for the lease", 1, 5*time.Second)

	// Three leases: the follower must be kept out by renewals alone.
	wa.await(t, "lease renewed", 9, 10*lease)
	noTerm(t, bTerms, "B")
	if waits := wb.count("waiting for the lease"); waits < 2 {
		t.Errorf("B waited %d times over three leases; it should wait again after each lease it was told", waits)
	}
	close(release)
	b := awaitTerm(t, bTerms, 5*time.Second)
	select {
	case err := <-cancelled:
		t.Fatalf("the leader's term was cancelled while it renewed: %v", err)
	default:
	}
	if b.Fence <= a.Fence {
		t.Errorf("B's fence %d is not above A's %d", b.Fence, a.Fence)
	}
}

// testCooldown checks that a replica whose fn returns stays out for the
// cooldown and then wins again with a higher fence.
func testCooldown(t *testing.T, h Harness) {
	const cooldown = 250 * time.Millisecond
	terms := make(chan leader.Term, 8)
	p := leader.Params{Name: nameFor(t), Replica: "A", Lease: 200 * time.Millisecond, Cooldown: cooldown}
	lead(t, h.New(t, newWatch().logger()), p, func(_ context.Context, term leader.Term) { terms <- term })
	prev := awaitTerm(t, terms, 5*time.Second)
	for range 2 {
		next := awaitTerm(t, terms, 5*time.Second)
		if gap := next.Start.Sub(prev.Start); gap < cooldown {
			t.Errorf("won again %v after resigning, before the %v cooldown", gap, cooldown)
		}
		if next.Fence <= prev.Fence {
			t.Errorf("fence %d after %d", next.Fence, prev.Fence)
		}
		prev = next
	}
}
