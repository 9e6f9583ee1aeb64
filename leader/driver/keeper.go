package driver

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/lease"
	"github.com/slotcron/slotcron/leader"
)

// startKeeper keeps one term's lease (package lease: renewal every Lease/3,
// a trust window of sent + Lease − Margin on both clocks). When trust ends
// without a renewal the term's context is cancelled with
// leader.ErrNotRenewed; when the store says the lease is gone, with the
// store's error (wrapping leader.ErrLeaseLost). Renewals stop when the
// term's context ends for any reason.
func startKeeper(tctx context.Context, s Session, p leader.Params, fence int64, sent time.Time,
	cancel context.CancelCauseFunc, renewal prometheus.Observer, log *slog.Logger) *lease.Keeper {
	return lease.Start(sent, lease.Config{Lease: p.Lease, Margin: p.Margin, Done: tctx.Done()},
		&term{s: s, lease: p.Lease, fence: fence, cancel: cancel, renewal: renewal, log: log})
}

// term holds one term's lease (lease.Holder).
type term struct {
	s       Session
	lease   time.Duration
	fence   int64
	cancel  context.CancelCauseFunc
	renewal prometheus.Observer
	log     *slog.Logger
}

func (t *term) Renew(ctx context.Context) error { return t.s.Renew(ctx, t.fence, t.lease) }
func (t *term) Gone(err error) bool             { return errors.Is(err, leader.ErrLeaseLost) }
func (t *term) Ended(error) bool                { return false }

func (t *term) Lost(expired bool, err error) {
	if expired {
		t.cancel(leader.ErrNotRenewed)
	} else {
		t.cancel(err)
	}
}

func (t *term) Renewed(sent time.Time, rtt time.Duration) {
	t.renewal.Observe(rtt.Seconds())
	t.log.Debug("lease renewed", "sent", sent, "rtt", rtt)
}

func (t *term) RenewFailed(err error, trustedFor time.Duration) {
	t.log.Warn("leader: lease renewal failed", "err", err, "trusted_for", trustedFor.Round(time.Millisecond))
}
