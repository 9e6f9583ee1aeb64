package driver_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/leader/internal/fakedriver"
)

// term is what a test's fn saw of one term.
type term struct {
	leader.Term
	end   time.Time // when its context was cancelled, as fn saw it
	cause error
}

// recorder runs Lead for a test and keeps the terms its fn saw. Its fn
// holds each term until the context ends or resign is closed.
type recorder struct {
	mu     sync.Mutex
	terms  []term
	resign chan struct{}
}

func (r *recorder) fn(ctx context.Context, t leader.Term) {
	r.mu.Lock()
	r.terms = append(r.terms, term{Term: t})
	i := len(r.terms) - 1
	resign := r.resign
	r.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-resign:
	}
	r.mu.Lock()
	r.terms[i].end, r.terms[i].cause = time.Now(), context.Cause(ctx)
	r.mu.Unlock()
}

func (r *recorder) get() []term {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]term(nil), r.terms...)
}

// start runs e.Lead(p) with r's fn in a goroutine of wg.
func (r *recorder) start(ctx context.Context, wg *sync.WaitGroup, e leader.Elector, p leader.Params) {
	wg.Go(func() {
		if err := e.Lead(ctx, p, r.fn); err != nil {
			panic(err)
		}
	})
}

var quiet = driver.Options{Logger: slog.New(slog.DiscardHandler)}

// The trust window, to the nanosecond on synctest's clock: A wins at 0 and
// renews at Lease/3; its next renewal stalls. A's context is cancelled at
// Lease/3 + Lease − Margin, with the default margin (a tenth of the lease,
// at least 10 ms); the store's lease ends at Lease/3 + Lease, and B, told
// each time how long is left, wins at exactly that instant.
func TestTrustWindow(t *testing.T) {
	for _, tc := range []struct{ lease, margin time.Duration }{
		{time.Second, 100 * time.Millisecond},
		{60 * time.Millisecond, 10 * time.Millisecond},
	} {
		t.Run(tc.lease.String(), func(t *testing.T) { testTrustWindow(t, tc.lease, tc.margin) })
	}
}

func testTrustWindow(t *testing.T, lease, margin time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		st := fakedriver.New()
		da := st.Driver()
		p := leader.Params{Name: "fanout", Replica: "A", Lease: lease}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		a, b := &recorder{}, &recorder{}
		t0 := time.Now()
		a.start(ctx, &wg, driver.NewElector(da, quiet), p)
		synctest.Wait()
		p.Replica = "B"
		b.start(ctx, &wg, driver.NewElector(st.Driver(), quiet), p)
		time.Sleep(p.Lease / 2) // A renewed once, at Lease/3
		da.Stall()
		time.Sleep(2 * p.Lease)

		renewed := t0.Add(p.Lease / 3)
		at := a.get()[0]
		if want := renewed.Add(p.Lease - margin); !at.end.Equal(want) {
			t.Errorf("A's term ended at +%v, want +%v", at.end.Sub(t0), want.Sub(t0))
		}
		if !errors.Is(at.cause, leader.ErrNotRenewed) {
			t.Errorf("A's cause %v, want ErrNotRenewed", at.cause)
		}
		bt := b.get()
		if len(bt) != 1 {
			t.Fatalf("B had %d terms, want 1", len(bt))
		}
		if want := renewed.Add(p.Lease); !bt[0].Start.Equal(want) {
			t.Errorf("B's term began at +%v, want +%v, when A's lease ended in the store", bt[0].Start.Sub(t0), want.Sub(t0))
		}
		if bt[0].Fence <= at.Fence {
			t.Errorf("B's fence %d is not above A's %d", bt[0].Fence, at.Fence)
		}
		cancel()
		wg.Wait()
	})
}

// A renewal the store refuses ends the term at once, with ErrLeaseLost.
func TestLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := fakedriver.New()
		p := leader.Params{Name: "fanout", Replica: "A", Lease: 3 * time.Second}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		a := &recorder{}
		t0 := time.Now()
		a.start(ctx, &wg, driver.NewElector(st.Driver(), quiet), p)
		time.Sleep(1500 * time.Millisecond)
		st.Revoke("fanout") // the store lost its data
		time.Sleep(time.Second)
		ts := a.get()
		if got := ts[0].end.Sub(t0); got != 2*time.Second {
			t.Errorf("the term ended at +%v, want +2s, at the second renewal", got)
		}
		if !errors.Is(ts[0].cause, leader.ErrLeaseLost) {
			t.Errorf("cause %v, want ErrLeaseLost", ts[0].cause)
		}
		// The campaign goes on: A wins again at once, with a higher fence.
		if len(ts) != 2 || !ts[1].Start.Equal(ts[0].end) || ts[1].Fence <= ts[0].Fence {
			t.Errorf("after the loss: terms %+v, want a new term at once with a higher fence", ts)
		}
		cancel()
		wg.Wait()
	})
}
