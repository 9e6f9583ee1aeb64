package engine

import (
	"context"
	"errors"
	"log/slog"
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
	// sent is when the claim was sent: the trust window's start until the
	// keeper is stored (its timers may fire before keep has stored it).
	sent time.Time
	log  runLogger
	span runSpan
	// reported is set by the first report of the lease's loss: the keeper
	// and the run's end may each find it, and it is counted once.
	reported atomic.Bool
	// keeper is the run's lease keeper, once keep has made it.
	keeper atomic.Pointer[lease.Keeper]
}

// keepLease keeps the lease of one run's claim (package lease: renewal every
// lease/3, a trust window on both clocks, guarantee 5). When the lease is
// lost the job's context is cancelled with ErrLeaseLost. Renewals stop for
// good at timeout + lease, so a job that ignores its cancelled context
// cannot keep its slot from a successor forever; the stale job is left to
// the fence.
func (r *runLease) keep(sent time.Time) *lease.Keeper {
	r.sent, r.renewUntil = sent, sent.Add(r.p.timeout+r.p.lease)
	k := lease.Start(sent, lease.Config{Lease: r.p.lease, RenewUntil: r.renewUntil}, r)
	r.keeper.Store(k)
	return k
}

// frozen reports whether the keeper found its trust window ended well after
// it did: the process was not running then (kill -STOP, a long GC pause, a
// suspended VM), so nothing the job did or ignored explains the loss.
func (r *runLease) frozen() bool {
	until := r.sent.Add(r.p.lease - lease.DefaultMargin(r.p.lease)) // the keeper's first trust window
	if k := r.keeper.Load(); k != nil {
		until = k.TrustedUntil()
	} else if r.sent.IsZero() {
		return false
	}
	return time.Since(until) > max(time.Second, r.p.lease/3)
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
	switch {
	case !expired:
		r.report(slog.LevelWarn, "the store no longer holds this claim")
	case r.frozen():
		r.lostUnnoticed()
	case !time.Now().Before(r.renewUntil):
		r.report(slog.LevelError, "the job ignored its cancelled context past timeout + lease; the slot goes to a successor")
	default:
		r.report(slog.LevelWarn, "trust window ended without a successful renewal")
	}
}

// lostUnnoticed reports a lease whose trust window ended before the keeper
// could say so: the replica was frozen (kill -STOP, a GC pause, a suspended
// VM) past its lease, and the job ended with it. It is counted and logged as
// any lost lease, once, and at WARN however long the freeze: the job did
// nothing wrong.
func (r *runLease) lostUnnoticed() {
	r.report(slog.LevelWarn, "this replica was frozen or suspended past its lease; the job ended meanwhile")
}

// refused reports the lease lost because the store refused the run's
// outcome: another claim holds the slot.
func (r *runLease) refused(outcome slotstore.Outcome) {
	r.report(slog.LevelWarn, "the store refused the outcome: another claim holds the slot", "outcome", outcome)
}

// report cancels the run, counts the lost lease and logs it, the first time
// any of the keeper, the run's end or its finish finds it lost.
func (r *runLease) report(level slog.Level, reason string, attrs ...any) {
	if !r.reported.CompareAndSwap(false, true) {
		return
	}
	r.cancel(ErrLeaseLost)
	r.s.metrics.leaseLost(r.p).Inc()
	r.log.get().Log(context.Background(), level, "lease lost", append([]any{"reason", reason}, attrs...)...)
}

func (r *runLease) Renewed(_ time.Time, rtt time.Duration) {
	r.s.metrics.renewal(r.p).Observe(rtt.Seconds())
}

func (r *runLease) RenewFailed(err error, trustedFor time.Duration) {
	r.log.get().Warn("lease renewal failed", "err", err, "trusted_for", trustedFor.Round(time.Millisecond))
}
