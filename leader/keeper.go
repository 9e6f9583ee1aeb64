package leader

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/lease"
)

// startKeeper keeps one term's lease (package lease: renewal every Lease/3,
// a trust window of sent + Lease − Margin on both clocks). When trust ends
// without a renewal the term's context is cancelled with ErrNotRenewed;
// when the store says the lease is gone, with the store's error (wrapping
// ErrLeaseLost). Renewals stop when the term's context ends for any reason.
func startKeeper(tctx context.Context, s Session, p Params, fence int64, sent time.Time,
	cancel context.CancelCauseFunc, renewal prometheus.Observer, log *slog.Logger) *lease.Keeper {
	return lease.Start(sent, lease.Config{
		Lease:  p.Lease,
		Margin: p.Margin,
		Renew:  func(ctx context.Context) error { return s.Renew(ctx, fence, p.Lease) },
		Gone:   func(err error) bool { return errors.Is(err, ErrLeaseLost) },
		OnLost: func(expired bool, err error) {
			if expired {
				cancel(ErrNotRenewed)
			} else {
				cancel(err)
			}
		},
		OnRenewed: func(sent time.Time, rtt time.Duration) {
			renewal.Observe(rtt.Seconds())
			log.Debug("lease renewed", "sent", sent, "rtt", rtt)
		},
		OnRenewError: func(err error, trustedFor time.Duration) {
			log.Warn("leader: lease renewal failed", "err", err, "trusted_for", trustedFor.Round(time.Millisecond))
		},
		Done: tctx.Done(),
	})
}
