package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// slotDriver keeps duty leases in the slot store itself, for the stores
// that have no elector of their own (SQLite, memory). A duty's lease is one
// slot that never finishes: job "duty:<name>" at the Unix epoch. Winning its
// claim is winning a term, with the store's fence; a dead leader's slot is
// taken over when its lease ends, exactly as a job's is; resigning releases
// it. The store keeps one lease clock for both, so the guarantees are the
// slot store's.
type slotDriver struct {
	store slotstore.Store
	// poll bounds each Wait, so a follower notices a released lease within
	// it: these stores cannot notify.
	poll time.Duration
}

var _ driver.Driver = (*slotDriver)(nil)

// dutySlot is the instant every duty's lease slot is keyed on.
var dutySlot = time.Unix(1, 0).UTC()

// dutyRetain keeps a duty's marker for as long as the store allows.
const dutyRetain = 100 * 365 * 24 * time.Hour

func (d *slotDriver) Open(ctx context.Context, name, holder string) (driver.Session, error) {
	return &slotSession{d: d, job: "duty:" + name, holder: holder}, nil
}

type slotSession struct {
	d      *slotDriver
	job    string
	holder string
}

func (s *slotSession) ref(fence int64) slotstore.Ref {
	return slotstore.Ref{Job: s.job, Slot: dutySlot, Fence: fence}
}

func (s *slotSession) Acquire(ctx context.Context, lease time.Duration) (driver.Attempt, error) {
	res, err := s.d.store.Claim(ctx, slotstore.ClaimParams{Replica: s.holder, Requests: []slotstore.ClaimRequest{{
		Job: s.job, Slot: dutySlot, Lease: lease, OnCrash: policy.OnCrashRetry, Retain: dutyRetain, Term: true,
	}}})
	if err != nil {
		return driver.Attempt{}, err
	}
	r := res[0]
	switch {
	case r.Status == slotstore.Won:
		return driver.Attempt{Won: true, Fence: r.Claim.Fence}, nil
	case r.Status == slotstore.Held && r.Marker.Holder == s.holder:
		// This campaign's own claim, whose reply was lost: the holder
		// string is unique to the campaign, so it is safe to adopt. Its
		// lease ran from the first claim; renew it now so the store's
		// lease covers the trust window the elector starts from this
		// Acquire.
		if err := s.Renew(ctx, r.Marker.Fence, lease); err != nil {
			return driver.Attempt{}, err
		}
		return driver.Attempt{Won: true, Fence: r.Marker.Fence}, nil
	case r.Status == slotstore.Held:
		return driver.Attempt{Remaining: r.Remaining}, nil
	}
	return driver.Attempt{}, fmt.Errorf("duty lease %s is %s", s.job, r.Status)
}

func (s *slotSession) Renew(ctx context.Context, fence int64, lease time.Duration) error {
	err := s.d.store.Renew(ctx, slotstore.RenewParams{Ref: s.ref(fence), Lease: lease})
	if errors.Is(err, slotstore.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", leader.ErrLeaseLost, err)
	}
	return err
}

func (s *slotSession) Release(ctx context.Context, fence int64) error {
	err := s.d.store.Release(ctx, s.ref(fence))
	if errors.Is(err, slotstore.ErrLeaseLost) {
		return nil
	}
	return err
}

func (s *slotSession) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(min(d, s.d.poll))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *slotSession) Close() error { return nil }
