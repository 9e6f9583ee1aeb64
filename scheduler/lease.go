package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// errLeaseLost is the cause of a job context cancelled because the replica
// can no longer trust its lease.
var errLeaseLost = errors.New("scheduler: lease lost")

// leaseKeeper renews one claim every lease/3 from its own goroutine and
// enforces guarantee 5: the holder trusts its lease only until
// sent + lease − margin, where sent is when the last successful renewal (or
// the claim) was sent, on this process's monotonic clock. When that moment
// passes without a renewal, or the store says the claim is gone, the job's
// context is cancelled and the keeper reports the lease lost.
type leaseKeeper struct {
	store  slotstore.Store
	ref    slotstore.Ref
	lease  time.Duration
	margin time.Duration
	cancel context.CancelCauseFunc
	log    *slog.Logger

	mu    sync.Mutex
	until time.Time   // end of the trust window (monotonic)
	timer *time.Timer // fires at until
	lostc chan struct{}

	stopc chan struct{}
	done  chan struct{}
}

// trustMargin is subtracted from the lease to absorb clock-rate differences
// and the time a cancelled job needs to notice.
func trustMargin(lease time.Duration) time.Duration { return max(lease/10, 10*time.Millisecond) }

func startLeaseKeeper(st slotstore.Store, ref slotstore.Ref, lease time.Duration, sent time.Time,
	cancel context.CancelCauseFunc, log *slog.Logger) *leaseKeeper {
	k := &leaseKeeper{
		store: st, ref: ref, lease: lease, margin: trustMargin(lease), cancel: cancel, log: log,
		lostc: make(chan struct{}), stopc: make(chan struct{}), done: make(chan struct{}),
	}
	k.until = sent.Add(lease - k.margin)
	k.timer = time.AfterFunc(time.Until(k.until), k.expire)
	go k.renewLoop()
	return k
}

// lost is closed once the lease is lost.
func (k *leaseKeeper) lost() <-chan struct{} { return k.lostc }

func (k *leaseKeeper) isLost() bool {
	select {
	case <-k.lostc:
		return true
	default:
		return false
	}
}

// trustedUntil is the end of the current trust window.
func (k *leaseKeeper) trustedUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.until
}

// stop ends renewals and waits for the renewing goroutine.
func (k *leaseKeeper) stop() {
	close(k.stopc)
	<-k.done
	k.timer.Stop()
}

func (k *leaseKeeper) expire() {
	k.mu.Lock()
	early := time.Now().Before(k.until) // a renewal moved the window as the timer fired
	k.mu.Unlock()
	if !early {
		k.lose("trust window ended without a successful renewal")
	}
}

func (k *leaseKeeper) lose(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.isLost() {
		return
	}
	close(k.lostc)
	k.cancel(errLeaseLost)
	k.log.Warn("lease lost", "reason", reason)
}

func (k *leaseKeeper) extend(sent time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.isLost() {
		return
	}
	k.until = sent.Add(k.lease - k.margin)
	k.timer.Reset(time.Until(k.until))
}

func (k *leaseKeeper) renewLoop() {
	defer close(k.done)
	interval := k.lease / 3
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-k.stopc:
			return
		case <-k.lostc:
			return
		case <-t.C:
		}
		until := k.trustedUntil()
		if !time.Now().Before(until) {
			k.lose("trust window ended before renewal")
			return
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), until)
		err := k.store.Renew(ctx, slotstore.RenewParams{Ref: k.ref, Lease: k.lease})
		cancel()
		switch {
		case err == nil:
			k.extend(sent)
			t.Reset(interval)
		case errors.Is(err, slotstore.ErrLeaseLost):
			k.lose("the store no longer holds this claim")
			return
		default:
			k.log.Warn("lease renewal failed", "err", err, "trusted_for", time.Until(until).Round(time.Millisecond))
			t.Reset(max(interval/4, 10*time.Millisecond))
		}
	}
}
