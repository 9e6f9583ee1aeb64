package leadertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// handOverBound is generous: a hand-over takes a round trip or two plus
// scheduling, a millisecond or so on loopback.
const handOverBound = 200 * time.Millisecond

// testHandOver checks that a follower told that seconds remain takes over
// at once when the leader's fn returns, and again when the leader's Lead
// is cancelled.
func testHandOver(t *testing.T, h Harness) {
	const lease = 5 * time.Second // only a release can explain a quick takeover
	name := nameFor(t)
	wb, wc := newWatch(), newWatch()
	aTerms, bTerms, cTerms := make(chan leader.Term, 1), make(chan leader.Term, 1), make(chan leader.Term, 1)
	release := make(chan struct{})
	resignedAt := make(chan time.Time, 1)
	lead(t, h.New(t, newWatch().logger()), leader.Params{Name: name, Replica: "A", Lease: lease},
		func(ctx context.Context, term leader.Term) {
			aTerms <- term
			<-release
			resignedAt <- time.Now()
		})
	awaitTerm(t, aTerms, 5*time.Second)
	b := lead(t, h.New(t, wb.logger()), leader.Params{Name: name, Replica: "B", Lease: lease}, hold(bTerms, nil))
	waitLong(t, wb)

	close(release)
	bTerm := awaitTerm(t, bTerms, 2*time.Second)
	d := bTerm.Start.Sub(<-resignedAt)
	t.Logf("hand-over after fn returned: %v", d)
	if d > handOverBound {
		t.Errorf("B took over %v after A resigned, want under %v", d, handOverBound)
	}

	lead(t, h.New(t, wc.logger()), leader.Params{Name: name, Replica: "C", Lease: lease}, hold(cTerms, nil))
	waitLong(t, wc)
	cancelledAt := time.Now()
	b.cancel()
	cTerm := awaitTerm(t, cTerms, 2*time.Second)
	d = cTerm.Start.Sub(cancelledAt)
	t.Logf("hand-over after Lead's context ended: %v", d)
	if d > handOverBound {
		t.Errorf("C took over %v after B's Lead was cancelled, want under %v", d, handOverBound)
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

// testCancelWhileFollowing checks that Lead returns promptly when its
// context ends while it waits for another replica's lease.
func testCancelWhileFollowing(t *testing.T, h Harness) {
	name := nameFor(t)
	terms := make(chan leader.Term, 1)
	lead(t, h.New(t, newWatch().logger()), leader.Params{Name: name, Replica: "A", Lease: 5 * time.Second}, hold(terms, nil))
	awaitTerm(t, terms, 5*time.Second)
	w := newWatch()
	b := lead(t, h.New(t, w.logger()), leader.Params{Name: name, Replica: "B", Lease: 5 * time.Second},
		func(context.Context, leader.Term) { t.Error("B won while A led") })
	waitLong(t, w)
	if d := b.stop(t); d > 500*time.Millisecond {
		t.Errorf("Lead returned %v after its context ended while following, want under 500ms", d)
	} else {
		t.Logf("Lead returned %v after its context ended while following", d)
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
		"short lease":     func(p *leader.Params) { p.Lease = leader.MinLease - 1 },
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
