// Package lease keeps one lease alive and tells its holder when to stop
// trusting it: the one mechanism behind slot runs (package scheduler) and
// leadership terms (package leader).
//
// A Keeper renews every Lease/3 from its own goroutine, started when the
// first renewal is due, Lease/3 after the acquiring call was sent (however
// much later Start is called). The holder trusts the
// lease only until sent + Lease − Margin, where sent is when the last
// successful renewal (or the acquiring call) was sent. The window runs on
// both of the process's clocks: the monotonic one, immune to wall-clock
// steps, and the wall clock, which unlike the monotonic one goes on while the
// host is suspended; trust ends when either says so. When it ends without a
// renewal, or a renewal says the lease is gone, Holder.Lost is called once, with
// the reason; the holder cancels its work there. A store error that is
// neither is retried sooner, for as long as the window lasts.
package lease

import (
	"context"
	"sync"
	"time"
)

// Config describes one lease.
type Config struct {
	// Lease is the lease's length in the store; renewals go every Lease/3.
	Lease time.Duration
	// Margin is taken off the lease on the holder's side. Zero means
	// DefaultMargin(Lease).
	Margin time.Duration
	// RenewUntil, when not zero, is when renewals stop for good: the lease
	// then runs out and Holder.Lost is called when trust ends.
	RenewUntil time.Time
	// Done, when set, stops renewals when it is closed (the holder's work
	// ended for another reason).
	Done <-chan struct{}
}

// Holder is the lease's holder: it renews the lease in its store and hears
// how the lease fares. One value holds all of it, so keeping a lease costs
// no closure per callback.
type Holder interface {
	// Renew extends the lease to Lease from now, by the store's clock. ctx
	// ends with the trust window.
	Renew(ctx context.Context) error
	// Gone reports whether a Renew error means the store no longer holds
	// the lease (no retry can help).
	Gone(err error) bool
	// Ended reports whether a Renew error means the holder's own work
	// already recorded its end in the store (a transaction that completed
	// the run): renewals stop, the lease is not lost, and Lost is never
	// called (Keeper.Ended).
	Ended(err error) bool
	// Lost is called once, from the Keeper's goroutines, when the lease is
	// lost: expired is true when trust ran out, false when Renew said the
	// lease is gone (err is then its error).
	Lost(expired bool, err error)
	// Renewed observes each renewal that succeeded: when it was sent, and
	// how long its reply took.
	Renewed(sent time.Time, rtt time.Duration)
	// RenewFailed is told of each renewal that failed and will be
	// retried, with the time trust has left.
	RenewFailed(err error, trustedFor time.Duration)
}

// DefaultMargin is a tenth of the lease, at least 10 ms.
func DefaultMargin(lease time.Duration) time.Duration { return max(lease/10, 10*time.Millisecond) }

// Keeper keeps one lease; build it with Start.
type Keeper struct {
	c Config
	h Holder

	mu    sync.Mutex
	until time.Time // end of the trust window
	// timer first fires when the first renewal is due (or trust ends, if
	// sooner) and starts the renewing goroutine, so work shorter than a
	// renewal interval costs no goroutine; from then on it fires at until.
	timer   *time.Timer
	ticked  bool          // the timer has fired once
	lost    bool          // the lease is lost
	lostc   chan struct{} // closed when lost; made by the first Lost call
	stopped bool          // Stop was called: Holder.Lost must not be
	ended   bool          // a renewal found the work recorded as ended: Holder.Lost must not be
	paused  bool          // Pause was called
	// renewing counts the renewing goroutine, from Start: it ends it, or
	// Pause does when the timer has not fired yet.
	renewing sync.WaitGroup
	// stopc is closed by Pause; the renewing goroutine makes it when it
	// starts, so work shorter than a renewal interval costs no channel.
	stopc chan struct{}
	// losing counts a call of Holder.Lost under way, which Stop waits for.
	losing sync.WaitGroup
}

// Start begins keeping, for h, a lease acquired by a call sent at sent.
func Start(sent time.Time, c Config, h Holder) *Keeper {
	if c.Margin == 0 {
		c.Margin = DefaultMargin(c.Lease)
	}
	k := &Keeper{c: c, h: h, until: sent.Add(c.Lease - c.Margin)}
	k.renewing.Add(1)
	k.mu.Lock()
	k.timer = time.AfterFunc(min(time.Until(sent.Add(c.Lease/3)), time.Until(k.until)), k.fire)
	k.mu.Unlock()
	return k
}

// fire is the timer's: the first time, it sets the timer to the end of the
// trust window and becomes the renewing goroutine (unless Pause came
// first); after that, the trust window has ended, or moved.
func (k *Keeper) fire() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	if !k.ticked {
		k.ticked = true
		k.timer.Reset(time.Until(k.until))
		renew := !k.paused
		k.mu.Unlock()
		if renew {
			k.renewLoop()
		}
		return
	}
	k.mu.Unlock()
	k.expire()
}

// Lost is closed once the lease is lost.
func (k *Keeper) Lost() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lostc == nil {
		k.lostc = make(chan struct{})
		if k.lost {
			close(k.lostc)
		}
	}
	return k.lostc
}

// TrustedUntil is the end of the current trust window.
func (k *Keeper) TrustedUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.until
}

// Trusted reports whether the lease is still trusted now, by both clocks.
func (k *Keeper) Trusted() bool {
	k.mu.Lock()
	lost, until := k.lost, k.until
	k.mu.Unlock()
	return !lost && Within(time.Now(), until)
}

// Within reports whether now is before until on the monotonic clock and on
// the wall clock (Round(0) strips the monotonic reading).
func Within(now, until time.Time) bool {
	return now.Before(until) && now.Round(0).Before(until.Round(0))
}

// Ended reports whether a renewal found that the holder's work already
// recorded its end in the store (Config.Ended): the lease is no longer
// needed, and was not lost.
func (k *Keeper) Ended() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ended
}

// end stops the trust timer for good: the work recorded its end.
func (k *Keeper) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost {
		return // lost first
	}
	k.ended = true
	k.timer.Stop()
}

// Pause stops renewals and waits for the renewing goroutine; the trust
// window keeps running. A holder calls it before its final write, so no
// renewal races that write.
func (k *Keeper) Pause() {
	k.mu.Lock()
	if !k.paused {
		k.paused = true
		if k.stopc != nil {
			close(k.stopc)
		}
		// A timer that has not fired starts no renewing goroutine when
		// it does; one that has is that goroutine, which ends on stopc.
		if !k.ticked {
			k.renewing.Done()
		}
	}
	k.mu.Unlock()
	k.renewing.Wait()
}

// Stop ends the Keeper: no renewal, no trust timer. Holder.Lost is not called
// after Stop returns, nor running then: a call that began before waits for
// Stop to return until it ends (Holder.Lost must not call Stop).
func (k *Keeper) Stop() {
	k.Pause()
	k.mu.Lock()
	k.timer.Stop()
	k.stopped = true
	k.mu.Unlock()
	k.losing.Wait()
}

func (k *Keeper) expire() {
	k.mu.Lock()
	moved := Within(time.Now(), k.until) // a renewal moved the window as the timer fired
	k.mu.Unlock()
	if !moved {
		k.lose(true, nil)
	}
}

func (k *Keeper) lose(expired bool, err error) {
	k.mu.Lock()
	if k.lost || k.stopped || k.ended {
		k.mu.Unlock()
		return
	}
	k.lost = true
	if k.lostc != nil {
		close(k.lostc)
	}
	k.losing.Add(1) // under mu, so a Stop that follows waits for it
	k.mu.Unlock()
	defer k.losing.Done()
	k.h.Lost(expired, err)
}

func (k *Keeper) extend(sent time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost {
		return
	}
	k.until = sent.Add(k.c.Lease - k.c.Margin)
	k.timer.Reset(time.Until(k.until))
}

// renewLoop is the renewing goroutine: the timer's first firing runs it,
// when the first renewal is due.
func (k *Keeper) renewLoop() {
	defer k.renewing.Done()
	k.mu.Lock()
	if k.paused {
		k.mu.Unlock()
		return
	}
	k.stopc = make(chan struct{})
	stopc := k.stopc
	k.mu.Unlock()
	lostc := k.Lost()
	interval := k.c.Lease / 3
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stopc:
			return
		case <-lostc:
			return
		case <-k.c.Done:
			return
		case <-t.C:
		}
		until := k.TrustedUntil()
		if !Within(time.Now(), until) {
			k.lose(true, nil)
			return
		}
		if !k.c.RenewUntil.IsZero() && !time.Now().Before(k.c.RenewUntil) {
			return // the lease runs out; expire reports it
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), until)
		err := k.h.Renew(ctx)
		cancel()
		switch {
		case err == nil:
			k.h.Renewed(sent, time.Since(sent))
			k.extend(sent)
			t.Reset(interval)
		case k.h.Ended(err):
			k.end()
			return
		case k.h.Gone(err):
			k.lose(false, err)
			return
		default:
			k.h.RenewFailed(err, time.Until(until))
			t.Reset(max(interval/4, 10*time.Millisecond))
		}
	}
}
