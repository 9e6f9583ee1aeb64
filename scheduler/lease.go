package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/slotcron/slotcron/internal/lease"
	"github.com/slotcron/slotcron/slotstore"
)

// errLeaseLost is the cause of a job context cancelled because the replica
// can no longer trust its lease.
var errLeaseLost = errors.New("scheduler: lease lost")

// keepLease keeps the lease of one run's claim (package lease: renewal every
// lease/3, a trust window on both clocks, guarantee 5). When the lease is
// lost the job's context is cancelled with errLeaseLost. Renewals stop for
// good at timeout + lease, so a job that ignores its cancelled context
// cannot keep its slot from a successor forever; the stale job is left to
// the fence.
func (s *Scheduler) keepLease(p *plan, ref slotstore.Ref, sent time.Time, cancel context.CancelCauseFunc,
	log *runLogger) *lease.Keeper {
	renewUntil := sent.Add(p.timeout + p.lease)
	return lease.Start(sent, lease.Config{
		Lease:      p.lease,
		RenewUntil: renewUntil,
		Renew: func(ctx context.Context) error {
			return s.store.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: p.lease})
		},
		Gone: func(err error) bool { return errors.Is(err, slotstore.ErrLeaseLost) },
		// The job completed the slot in its own transaction (CompleteTx):
		// its lease is no longer needed, and its context goes on.
		Ended: func(err error) bool { return errors.Is(err, slotstore.ErrFinished) },
		OnLost: func(expired bool, err error) {
			cancel(errLeaseLost)
			s.metrics.leaseLost(p).Inc()
			switch {
			case !expired:
				log.get().Warn("lease lost", "reason", "the store no longer holds this claim")
			case !time.Now().Before(renewUntil):
				log.get().Error("lease lost", "reason", "the job ignored its cancelled context past timeout + lease; the slot goes to a successor")
			default:
				log.get().Warn("lease lost", "reason", "trust window ended without a successful renewal")
			}
		},
		OnRenewed: func(_ time.Time, rtt time.Duration) {
			s.metrics.renewal(p).Observe(rtt.Seconds())
		},
		OnRenewError: func(err error, trustedFor time.Duration) {
			log.get().Warn("lease renewal failed", "err", err, "trusted_for", trustedFor.Round(time.Millisecond))
		},
	})
}
