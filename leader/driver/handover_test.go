package driver_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/leader/internal/fakedriver"
)

// fn returning hands over at once; the replica that resigned stays out for
// its cooldown; cancelling Lead hands over at once too.
func TestHandOverAndCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := fakedriver.New()
		p := leader.Params{Name: "fanout", Lease: time.Second, Cooldown: 3 * time.Second}
		var wg sync.WaitGroup
		a, b := &recorder{resign: make(chan struct{})}, &recorder{resign: make(chan struct{})}
		actx, acancel := context.WithCancel(t.Context())
		bctx, bcancel := context.WithCancel(t.Context())
		t0 := time.Now()
		p.Replica = "A"
		a.start(actx, &wg, driver.NewElector(st.Driver(), quiet), p)
		synctest.Wait()
		p.Replica = "B"
		b.start(bctx, &wg, driver.NewElector(st.Driver(), quiet), p)

		time.Sleep(100 * time.Millisecond)
		close(a.resign) // A resigns at +100ms; B takes over at once
		synctest.Wait()
		if bt := b.get(); len(bt) != 1 || bt[0].Start.Sub(t0) != 100*time.Millisecond {
			t.Fatalf("B's terms %+v, want one starting at +100ms", bt)
		}
		time.Sleep(time.Second)
		bcancel() // B shuts down at +1.1s; A is still cooling down until +3.1s
		synctest.Wait()
		if at := a.get(); len(at) != 1 {
			t.Fatalf("A won again during its cooldown: %+v", at)
		}
		time.Sleep(3 * time.Second)
		at := a.get()
		if len(at) != 2 || at[1].Start.Sub(t0) != 3100*time.Millisecond {
			t.Fatalf("A's terms %+v, want a second one at +3.1s, when its cooldown ended", at)
		}
		if bt := b.get(); !(at[0].Fence < bt[0].Fence && bt[0].Fence < at[1].Fence) {
			t.Errorf("fences %d, %d, %d do not grow term by term", at[0].Fence, bt[0].Fence, at[1].Fence)
		}
		acancel()
		wg.Wait()
		if _, held := st.Expires("fanout"); held {
			t.Error("the lease is still held after every Lead returned")
		}
	})
}

// A follower cancelled while waiting returns at once; a leader cancelled
// while fn ignores its context returns only when fn does.
func TestLeadReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := fakedriver.New()
		p := leader.Params{Name: "fanout", Replica: "A", Lease: time.Second}
		release := make(chan struct{})
		actx, acancel := context.WithCancel(t.Context())
		adone := make(chan struct{})
		go func() {
			defer close(adone)
			driver.NewElector(st.Driver(), quiet).Lead(actx, p, func(context.Context, leader.Term) { <-release })
		}()
		synctest.Wait()
		bctx, bcancel := context.WithCancel(t.Context())
		bdone := make(chan struct{})
		go func() {
			defer close(bdone)
			p.Replica = "B"
			driver.NewElector(st.Driver(), quiet).Lead(bctx, p, func(context.Context, leader.Term) { t.Error("B won") })
		}()
		time.Sleep(10 * time.Millisecond)
		bcancel()
		synctest.Wait()
		select {
		case <-bdone:
		default:
			t.Error("B's Lead did not return at once when cancelled while following")
		}
		acancel()
		time.Sleep(5 * time.Second)
		select {
		case <-adone:
			t.Error("A's Lead returned while its fn was still running")
		default:
		}
		close(release)
		<-adone
	})
}
