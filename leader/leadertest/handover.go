package leadertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// slowBound bounds a step that takes a round trip or two, a millisecond or
// so on loopback: generous, since the suite runs on shared, loaded
// machines. The measured figure is logged, not asserted.
const slowBound = 3 * time.Second

// testHandOver checks that a follower told that seconds remain takes over
// when the leader's fn returns, and again when the leader's Lead is
// cancelled, before the leader's lease would have ended: only the release
// can explain it.
func testHandOver(t *testing.T, h Harness) {
	const lease = 5 * time.Second
	name := nameFor(t)
	wa, wb, wc := newWatch(), newWatch(), newWatch()
	aTerms, bTerms, cTerms := make(chan leader.Term, 1), make(chan leader.Term, 1), make(chan leader.Term, 1)
	release := make(chan struct{})
	resignedAt := make(chan time.Time, 1)
	lead(t, h.New(t, wa.logger()), leader.Params{Name: name, Replica: "A", Lease: lease},
		func(ctx context.Context, term leader.Term) {
			aTerms <- term
			<-release
			resignedAt <- time.Now()
		})
	awaitTerm(t, aTerms, 5*time.Second)
	b := lead(t, h.New(t, wb.logger()), leader.Params{Name: name, Replica: "B", Lease: lease}, hold(bTerms, nil))
	waitLong(t, wb)

	close(release)
	bTerm := awaitTerm(t, bTerms, lease+slowBound)
	d := bTerm.Start.Sub(<-resignedAt)
	t.Logf("hand-over after fn returned: %v", d)
	checkHandOver(t, "B", "A's fn returned", d, bTerm, wa.leaseEnd(lease))

	lead(t, h.New(t, wc.logger()), leader.Params{Name: name, Replica: "C", Lease: lease}, hold(cTerms, nil))
	waitLong(t, wc)
	cancelledAt := time.Now()
	b.cancel()
	cTerm := awaitTerm(t, cTerms, lease+slowBound)
	d = cTerm.Start.Sub(cancelledAt)
	t.Logf("hand-over after Lead's context ended: %v", d)
	checkHandOver(t, "C", "B's Lead was cancelled", d, cTerm, wb.leaseEnd(lease))
}

// checkHandOver fails t if the follower's term began only when the
// leader's lease would have ended anyway (the release did not wake it), or
// more than slowBound after the hand-over began.
func checkHandOver(t *testing.T, who, after string, d time.Duration, term leader.Term, leaseEnd time.Time) {
	t.Helper()
	if !term.Start.Before(leaseEnd) {
		t.Errorf("%s took over %v after the leader's lease could end, not woken by the release", who, term.Start.Sub(leaseEnd))
	}
	if d > slowBound {
		t.Errorf("%s took over %v after %s, want under %v", who, d, after, slowBound)
	}
}

// waitLong waits until the follower w watches has been told that more than
// a second of the lease is left.
func waitLong(t *testing.T, w *watch) {
	t.Helper()
	r := w.await(t, "waiting for the lease", 1, 5*time.Second)
	if left := r.attrs["left"].Duration(); left < time.Second {
		t.Fatalf("the follower was told %v is left, want over a second", left)
	}
}

// testCancelWhileFollowing checks that Lead returns when its context ends
// while it waits for another replica's lease, without waiting out the
// time it was told is left.
func testCancelWhileFollowing(t *testing.T, h Harness) {
	name := nameFor(t)
	terms := make(chan leader.Term, 1)
	lead(t, h.New(t, newWatch().logger()), leader.Params{Name: name, Replica: "A", Lease: 5 * time.Second}, hold(terms, nil))
	awaitTerm(t, terms, 5*time.Second)
	w := newWatch()
	b := lead(t, h.New(t, w.logger()), leader.Params{Name: name, Replica: "B", Lease: 5 * time.Second},
		func(context.Context, leader.Term) { t.Error("B won while A led") })
	waitLong(t, w)
	wait := w.last("waiting for the lease")
	d := b.stop(t)
	t.Logf("Lead returned %v after its context ended while following", d)
	if waitEnd := wait.at.Add(wait.attrs["left"].Duration()); !time.Now().Before(waitEnd) {
		t.Errorf("Lead returned only when the wait it was told ended, %v after its context ended", d)
	}
	if d > slowBound {
		t.Errorf("Lead returned %v after its context ended while following, want under %v", d, slowBound)
	}
}

// testInvalid checks that Lead rejects bad Params at once, without calling
// fn.
func testInvalid(t *testing.T, h Harness) {
	e := h.New(t, newWatch().logger())
	ok := leader.Params{Name: nameFor(t), Replica: "A", Lease: time.Second}
	for name, edit := range map[string]func(*leader.Params){
		"empty name":      func(p *leader.Params) { p.Name = "" },
		"empty replica":   func(p *leader.Params) { p.Replica = "" },
		"short lease":     func(p *leader.Params) { p.Lease = 50*time.Millisecond - 1 }, // below Params.Lease's floor
		"margin too wide": func(p *leader.Params) { p.Margin = p.Lease / 2 },
		"negative":        func(p *leader.Params) { p.Cooldown = -1 },
	} {
		p := ok
		edit(&p)
		err := e.Lead(t.Context(), p, func(context.Context, leader.Term) { t.Errorf("%s: fn called", name) })
		if !errors.Is(err, leader.ErrInvalid) {
			t.Errorf("%s: Lead returned %v, want ErrInvalid", name, err)
		}
	}
}
