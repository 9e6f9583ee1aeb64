package driver

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/internal/metrics"
)

// campaign is one call of Lead: it opens sessions with the store, follows
// the current leader, and leads when it wins. Everything it starts has
// ended when run returns.
type campaign struct {
	driver Driver
	p      leader.Params // validated, defaults filled in
	holder string
	fn     func(context.Context, leader.Term)
	log    *slog.Logger
	m      metrics.Duty
}

func (c *campaign) run(ctx context.Context) {
	for ctx.Err() == nil {
		octx, cancel := context.WithTimeout(ctx, c.p.Lease)
		s, err := c.driver.Open(octx, c.p.Name, c.holder)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("leader: cannot open a session with the store", "err", err)
				sleep(ctx, c.retry())
			}
			continue
		}
		c.follow(ctx, s)
		if err := s.Close(); err != nil {
			c.log.Debug("leader: closing the session failed", "err", err)
		}
	}
}

// retry is the pause after a store error.
func (c *campaign) retry() time.Duration { return max(c.p.Lease/10, 10*time.Millisecond) }

// follow campaigns on s until ctx ends or a call of s fails: it tries to
// acquire the lease, and while another replica holds it waits exactly the
// time the store says the lease has left, or until the holder releases it.
func (c *campaign) follow(ctx context.Context, s Session) {
	for ctx.Err() == nil {
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, c.p.Lease)
		a, err := s.Acquire(actx, c.p.Lease)
		cancel()
		rtt := time.Since(sent)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("leader: campaign failed", "err", err)
				sleep(ctx, c.retry())
			}
			return
		}
		if !a.Won {
			c.log.Debug("waiting for the lease", "left", a.Remaining)
			if err := s.Wait(ctx, max(a.Remaining, time.Millisecond)); err != nil {
				if ctx.Err() == nil {
					c.log.Warn("leader: waiting for the lease failed", "err", err)
					sleep(ctx, c.retry())
				}
				return
			}
			continue
		}
		if c.lead(ctx, s, a.Fence, sent, rtt) {
			sleep(ctx, c.p.Cooldown)
		}
	}
}

// lead runs one term won by an Acquire sent at sent, and reports whether
// fn resigned of its own accord.
func (c *campaign) lead(ctx context.Context, s Session, fence int64, sent time.Time, rtt time.Duration) (resigned bool) {
	log := c.log.With("fence", fence)
	tctx, cancel := context.WithCancelCause(ctx)
	k := startKeeper(tctx, s, c.p, fence, sent, cancel, c.m.Renewal, log)
	began := ctx.Err() == nil
	if began {
		log.Info("leadership acquired", "sent", sent, "rtt", rtt)
		c.m.Leader.Set(1)
		c.m.Changes.Inc()
		c.fn(tctx, leader.Term{Name: c.p.Name, Replica: c.p.Replica, Fence: fence, Start: time.Now()})
		resigned = tctx.Err() == nil
	}
	cancel(leader.ErrResigned)
	k.Stop()
	reason := endReason(context.Cause(tctx))
	if began {
		// Before the release, after which another campaign of this
		// process may win and set it.
		c.m.Leader.Set(0)
	}

	// Release even a term the store may have ended: the call is fenced, and
	// a lease still held after a failed renewal is handed over sooner.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), c.p.Lease)
	err := s.Release(rctx, fence)
	rcancel()
	if !began {
		return false
	}
	switch {
	case reason != "resigned" && reason != "shutdown":
		log.Warn("leadership lost", "reason", reason)
	case err != nil:
		log.Warn("leadership lost", "reason", reason, "release_err", err)
	default:
		log.Info("leadership lost", "reason", reason)
	}
	return resigned
}

// endReason names why a term ended, for the "leadership lost" line.
func endReason(cause error) string {
	switch {
	case errors.Is(cause, leader.ErrResigned):
		return "resigned"
	case errors.Is(cause, leader.ErrNotRenewed):
		return "lease not renewed in time"
	case errors.Is(cause, leader.ErrLeaseLost):
		return "lease lost: " + cause.Error()
	}
	return "shutdown"
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
