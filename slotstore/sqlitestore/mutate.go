package sqlitestore

import (
	"context"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Each fenced mutation is one conditional UPDATE: it changes the row only
// while the slot is running under the presented fence, so a stale holder
// changes nothing, and no row affected means the lease is lost.
const (
	renewMarker = `UPDATE markers SET lease_end = ?
		WHERE job = ? AND slot = ? AND state = 'running' AND fence = ?`
	// finishMarker makes the slot done, or retrying until lease_end.
	finishMarker = `UPDATE markers SET state = ?, outcome = ?, error = ?, duration_ns = ?,
		finished_at = ?, lease_end = ?
		WHERE job = ? AND slot = ? AND state = 'running' AND fence = ?`
	settledMarker = `SELECT 1 FROM markers
		WHERE job = ? AND slot = ? AND state IN ('done', 'retrying') AND fence = ?`
	releaseMarker = `UPDATE markers SET state = 'released', lease_end = ?
		WHERE job = ? AND slot = ? AND state = 'running' AND fence = ?`
)

// Renew implements slotstore.Store.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := rules.ValidateRenew(p); err != nil {
		return err
	}
	return s.mutate(ctx, "renew", p.Ref, func(now int64) (string, []any) {
		return renewMarker, []any{now + p.Lease.Milliseconds()}
	})
}

// Finish implements slotstore.Store.
func (s *Store) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if err := rules.ValidateFinish(p); err != nil {
		return err
	}
	return s.mutate(ctx, "finish", p.Ref, func(now int64) (string, []any) {
		state, leaseEnd := slotstore.StateDone, now
		if !p.RetryAt.IsZero() {
			state, leaseEnd = slotstore.StateRetrying, p.RetryAt.UnixMilli()
		}
		return finishMarker, []any{string(state), string(p.Outcome), p.Error, int64(p.Duration), now, leaseEnd}
	})
}

// Release implements slotstore.Store.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := rules.ValidateRef(ref); err != nil {
		return err
	}
	return s.mutate(ctx, "release", ref, func(now int64) (string, []any) {
		return releaseMarker, []any{now}
	})
}

// mutate runs the conditional UPDATE that stmt builds for the store's time
// now, in Unix milliseconds, followed by the ref's key and fence.
func (s *Store) mutate(ctx context.Context, op string, ref slotstore.Ref, stmt func(now int64) (string, []any)) error {
	op = fmt.Sprintf("%s %s fence %d", op, key(ref.Job, ref.Slot), ref.Fence)
	done, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer done()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", op, err)
	}
	query, args := stmt(s.clock().UnixMilli())
	res, err := s.conn().ExecContext(ctx, query, append(args, ref.Job, ref.Slot.Unix(), ref.Fence)...)
	if err != nil {
		return s.failSent(ctx, op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.fail(op, err)
	}
	if n == 0 {
		switch {
		case query == finishMarker && s.settledBy(ctx, ref):
			return nil // already finished by this claim
		case query == renewMarker && s.settledBy(ctx, ref):
			return fmt.Errorf("sqlitestore: %s: %w", op, slotstore.ErrFinished)
		}
		return fmt.Errorf("sqlitestore: %s: %w", op, slotstore.ErrLeaseLost)
	}
	return nil
}

// settledBy reports whether the slot is done or retrying under ref's fence.
// It runs while the caller holds this Store's write turn.
func (s *Store) settledBy(ctx context.Context, ref slotstore.Ref) bool {
	var one int
	err := s.conn().QueryRowContext(ctx, settledMarker, ref.Job, ref.Slot.Unix(), ref.Fence).Scan(&one)
	return err == nil
}
