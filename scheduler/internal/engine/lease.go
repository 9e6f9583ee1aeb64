package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/internal/lease"
	"github.com/slotcron/slotcron/slotstore"
)

// ErrLeaseLost is the cause of a job context cancelled because the replica
// can no longer trust its lease.
var ErrLeaseLost = errors.New("scheduler: lease lost")

// runLease is one run's claim as its lease keeper sees it (lease.Holder),
// with the run's logger: one value per run for all of it.
type runLease struct {
	s          *Engine
	st         slotstore.Store
	p          *plan
	ref        slotstore.Ref
	cancel     context.CancelCauseFunc
	renewUntil time.Time
	log        runLogger
	span       runSpan
	// reported is set by the first report of the lease's loss: the keeper
	// and the run's end may each find it, and it is counted once.
	reported atomic.Bool
}

// keepLease keeps the lease of one run's claim (package lease: renewal every
// lease/3, a trust window on both clocks, guarantee 5). When the lease is
// lost the job's context is cancelled with ErrLeaseLost. Renewals stop for
// good at timeout + lease, so a job that ignores its cancelled context
// cannot keep its slot from a successor forever; the stale job is left to
// the fence.
func (r *runLease) keep(sent time.Time) *lease.Keeper {
	r.renewUntil = sent.Add(r.p.timeout + r.p.lease)
	return lease.Start(sent, lease.Config{Lease: r.p.lease, RenewUntil: r.renewUntil}, r)
}

func (r *runLease) Renew(ctx context.Context) error {
	done := r.span.renewing()
	err := r.st.Renew(ctx, slotstore.RenewParams{Ref: r.ref, Lease: r.p.lease})
	done(err)
	return err
}

func (r *runLease) Gone(err error) bool { return errors.Is(err, slotstore.ErrLeaseLost) }

// Ended: the job completed the slot in its own transaction (CompleteTx): its
// lease is no longer needed, and its context goes on.
func (r *runLease) Ended(err error) bool { return errors.Is(err, slotstore.ErrFinished) }

func (r *runLease) Lost(expired bool, err error) {
	if !r.reported.CompareAndSwap(false, true) {
		return
	}
	r.cancel(ErrLeaseLost)
	r.s.metrics.leaseLost(r.p).Inc()
	switch {
	case !expired:
		r.log.get().Warn("lease lost", "reason", "the store no longer holds this claim")
	case !time.Now().Before(r.renewUntil):
		r.log.get().Error("lease lost", "reason", "the job ignored its cancelled context past timeout + lease; the slot goes to a successor")
	default:
		r.log.get().Warn("lease lost", "reason", "trust window ended without a successful renewal")
	}
}

// lostUnnoticed reports a lease whose trust window ended before the keeper
// could say so: the replica was frozen (kill -STOP, a GC pause, a suspended
// VM) past its lease, and the job ended with it. It is counted and logged as
// any lost lease, once.
func (r *runLease) lostUnnoticed() {
	r.Lost(true, nil)
}

func (r *runLease) Renewed(_ time.Time, rtt time.Duration) {
	r.s.metrics.renewal(r.p).Observe(rtt.Seconds())
}

func (r *runLease) RenewFailed(err error, trustedFor time.Duration) {
	r.log.get().Warn("lease renewal failed", "err", err, "trusted_for", trustedFor.Round(time.Millisecond))
}
