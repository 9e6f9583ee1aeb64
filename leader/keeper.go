package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// keeper renews one term's lease every Lease/3 from its own goroutine and
// keeps the trust window: the leader trusts its term only until
// sent + Lease − Margin, where sent is when the last successful renewal (or
// the winning Acquire) was sent. The window runs on both of this process's
// clocks, the monotonic one, immune to wall-clock steps, and the wall
// clock, which unlike the monotonic one goes on while the host is
// suspended; it ends when either says so. When it ends without a renewal,
// or the store says the lease is gone, the term's context is cancelled.
// Renewals stop when the term's context is cancelled for any reason.
type keeper struct {
	tctx    context.Context
	s       Session
	p       Params
	fence   int64
	cancel  context.CancelCauseFunc
	renewal prometheus.Observer
	log     *slog.Logger

	mu    sync.Mutex
	until time.Time   // end of the trust window
	timer *time.Timer // fires at until

	stopc chan struct{}
	done  chan struct{}
}

func startKeeper(tctx context.Context, s Session, p Params, fence int64, sent time.Time,
	cancel context.CancelCauseFunc, renewal prometheus.Observer, log *slog.Logger) *keeper {
	k := &keeper{
		tctx: tctx, s: s, p: p, fence: fence, cancel: cancel, renewal: renewal, log: log,
		until: sent.Add(p.Lease - p.Margin),
		stopc: make(chan struct{}), done: make(chan struct{}),
	}
	k.mu.Lock()
	k.timer = time.AfterFunc(time.Until(k.until), k.expire)
	k.mu.Unlock()
	go k.renewLoop()
	return k
}

// within reports whether now is before until on the monotonic clock and on
// the wall clock (Round(0) strips the monotonic reading).
func within(now, until time.Time) bool {
	return now.Before(until) && now.Round(0).Before(until.Round(0))
}

func (k *keeper) trustedUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.until
}

// expire runs when the trust timer fires.
func (k *keeper) expire() {
	k.mu.Lock()
	moved := within(time.Now(), k.until) // a renewal moved the window as the timer fired
	k.mu.Unlock()
	if !moved {
		k.cancel(ErrNotRenewed)
	}
}

func (k *keeper) extend(sent time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tctx.Err() != nil {
		return
	}
	k.until = sent.Add(k.p.Lease - k.p.Margin)
	k.timer.Reset(time.Until(k.until))
}

// stop ends renewals and the trust timer and waits for the renewing
// goroutine.
func (k *keeper) stop() {
	close(k.stopc)
	<-k.done
	k.mu.Lock()
	k.timer.Stop()
	k.mu.Unlock()
}

func (k *keeper) renewLoop() {
	defer close(k.done)
	interval := k.p.Lease / 3
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-k.stopc:
			return
		case <-k.tctx.Done():
			return
		case <-t.C:
		}
		until := k.trustedUntil()
		if !within(time.Now(), until) {
			k.cancel(ErrNotRenewed)
			return
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), until)
		err := k.s.Renew(ctx, k.fence, k.p.Lease)
		cancel()
		rtt := time.Since(sent)
		k.renewal.Observe(rtt.Seconds())
		switch {
		case err == nil:
			k.extend(sent)
			k.log.Debug("lease renewed", "sent", sent, "rtt", rtt)
			t.Reset(interval)
		case errors.Is(err, ErrLeaseLost):
			k.cancel(err)
			return
		default:
			k.log.Warn("leader: lease renewal failed", "err", err, "trusted_for", time.Until(until).Round(time.Millisecond))
			t.Reset(max(interval/4, 10*time.Millisecond))
		}
	}
}
