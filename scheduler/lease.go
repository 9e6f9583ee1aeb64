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
// the claim) was sent. The window is kept on both of this process's clocks:
// the monotonic one, immune to wall-clock steps, and the wall clock, which
// unlike the monotonic one goes on while the host is suspended; trust ends
// when either says so. When it ends without a renewal, or the store says the
// claim is gone, the job's context is cancelled and the keeper reports the
// lease lost.
//
// Renewals stop for good at renewUntil (the job's timeout plus one lease): a
// job that ignores its cancelled context does not hold the slot forever; its
// successor takes over and the stale job is left to the fence.
type leaseKeeper struct {
	store  slotstore.Store
	ref    slotstore.Ref
	lease  time.Duration
	margin time.Duration
	cancel context.CancelCauseFunc
	log    *slog.Logger

	renewUntil time.Time
	renewed    func(seconds float64) // observes each successful renewal's latency; may be nil
	lostHook   func()                // called once when the lease is lost; may be nil

	mu    sync.Mutex
	until time.Time   // end of the trust window (both clocks)
	timer *time.Timer // fires at until
	lostc chan struct{}

	stopc chan struct{}
	done  chan struct{}
}

// trustMargin is subtracted from the lease to absorb clock-rate differences
// and the time a cancelled job needs to notice.
func trustMargin(lease time.Duration) time.Duration { return max(lease/10, 10*time.Millisecond) }

// startLeaseKeeper starts keeping ref's lease; renewed and lost, which may
// be nil, observe each successful renewal's latency and the loss.
func startLeaseKeeper(st slotstore.Store, ref slotstore.Ref, lease, timeout time.Duration, sent time.Time,
	cancel context.CancelCauseFunc, log *slog.Logger, renewed func(seconds float64), lost func()) *leaseKeeper {
	k := &leaseKeeper{
		store: st, ref: ref, lease: lease, margin: trustMargin(lease), cancel: cancel, log: log,
		renewUntil: sent.Add(timeout + lease), renewed: renewed, lostHook: lost,
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

// trusted reports whether the lease is still trusted now, by both clocks.
func (k *leaseKeeper) trusted() bool {
	if k.isLost() {
		return false
	}
	return within(time.Now(), k.trustedUntil())
}

// within reports whether now is before until on the monotonic clock and on
// the wall clock (Round(0) strips the monotonic reading).
func within(now, until time.Time) bool {
	return now.Before(until) && now.Round(0).Before(until.Round(0))
}

// pause stops renewals and waits for the renewing goroutine; the trust
// window keeps running. The run calls it before it finishes or releases the
// slot, so no renewal races the final write.
func (k *leaseKeeper) pause() {
	select {
	case <-k.stopc:
	default:
		close(k.stopc)
	}
	<-k.done
}

// stop ends the keeper: no renewal, no trust timer.
func (k *leaseKeeper) stop() {
	k.pause()
	k.timer.Stop()
}

func (k *leaseKeeper) expire() {
	k.mu.Lock()
	early := within(time.Now(), k.until) // a renewal moved the window as the timer fired
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
	if k.lostHook != nil {
		k.lostHook()
	}
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
		if !within(time.Now(), until) {
			k.lose("trust window ended before renewal")
			return
		}
		if !time.Now().Before(k.renewUntil) {
			k.log.Error("job ignored its cancelled context past timeout + lease; renewals stop and the slot goes to a successor", "renew_until", k.renewUntil)
			return
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), until)
		err := k.store.Renew(ctx, slotstore.RenewParams{Ref: k.ref, Lease: k.lease})
		cancel()
		switch {
		case err == nil:
			if k.renewed != nil {
				k.renewed(time.Since(sent).Seconds())
			}
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
