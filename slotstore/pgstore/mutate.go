package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// Renew implements slotstore.Store: one conditional UPDATE that sets the
// lease end to the database's clock plus p.Lease.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.mutate(ctx, "renew", p.Ref, s.q.renew, micros(p.Lease))
}

// Release implements slotstore.Store: one conditional UPDATE.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	return s.mutate(ctx, "release", ref, s.q.release)
}

// mutate runs the conditional UPDATE sql with the ref's job, slot and fence
// followed by args; no row changed means the lease is lost.
func (s *Store) mutate(ctx context.Context, op string, ref slotstore.Ref, sql string, args ...any) error {
	slot := ref.Slot.UTC().Truncate(time.Second)
	op = fmt.Sprintf("%s %s fence %d", op, key(ref.Job, slot), ref.Fence)
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	tag, err := conn.Exec(ctx, sql, append([]any{ref.Job, slot, ref.Fence}, args...)...)
	if err != nil {
		return s.fail(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrLeaseLost)
	}
	return nil
}

// Finish implements slotstore.Store: one conditional UPDATE. Finish of a
// slot already done or retrying under the presented fence succeeds and
// changes nothing.
func (s *Store) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	var retryAt *time.Time
	if !p.RetryAt.IsZero() {
		retryAt = &p.RetryAt
	}
	return s.mutate(ctx, "finish", p.Ref, s.q.finish, string(p.Outcome), p.Error, int64(p.Duration), retryAt)
}
