package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Renew implements slotstore.Store: one call of the schema's renew
// function, which sets the lease end to p.Lease after the database's time
// when the request arrived, and, when the slot is not running under
// p.Fence, tells a slot done or retrying under it (slotstore.ErrFinished)
// from a lost lease. A renewal that waited for the marker's lock, held by a
// transaction that completed the slot with CompleteTx, sees what that
// transaction left: ErrFinished once it committed, and a renewed lease if
// it rolled back.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := rules.ValidateRenew(p); err != nil {
		return err
	}
	slot := p.Slot.UTC().Truncate(time.Second)
	op := fmt.Sprintf("renew %s fence %d", key(p.Job, slot), p.Fence)
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	var found string
	if err := conn.QueryRow(ctx, s.q.renew, p.Job, slot, p.Fence, micros(p.Lease)).Scan(&found); err != nil {
		return s.fail(op, err)
	}
	switch found {
	case "renewed":
		return nil
	case "finished":
		return fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrFinished)
	case "lost":
		return fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrLeaseLost)
	}
	return fmt.Errorf("pgstore: %s: renew answered %q", op, found)
}

// Release implements slotstore.Store: one conditional UPDATE.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := rules.ValidateRef(ref); err != nil {
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
	if err := rules.ValidateFinish(p); err != nil {
		return err
	}
	var retryAt *time.Time
	if !p.RetryAt.IsZero() {
		retryAt = &p.RetryAt
	}
	return s.mutate(ctx, "finish", p.Ref, s.q.finish, string(p.Outcome), p.Error, int64(p.Duration), retryAt)
}
