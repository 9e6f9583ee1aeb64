package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/jobs"
)

// Once records, inside tx, that the effect of run's slot is being
// committed, and returns nil; or, when the slot's effect was already
// committed — by any attempt, with any fence — returns an *AppliedError
// wrapping ErrApplied. Call it in the transaction that writes the effect,
// before the writes, and return nil from the job on ErrApplied: the slot's
// effect exists.
//
//	err := fence.OncePG(ctx, tx, run)
//	if errors.Is(err, fence.ErrApplied) {
//		return nil // committed by an earlier attempt, or by a newer holder
//	}
//
// The record is one row of fence_applied keyed on run.Key(), job@slot,
// with run.Fence. It is what refuses a repeat: a holder that commits its
// effect and then dies, freezes or loses the store before the slot is
// recorded finished is taken over, and its successor runs the job again
// with a higher fence, which a fence check alone accepts. Of two holders
// of one slot, a stale one and a newer one, whichever commits first has
// the slot's effect; the other gets ErrApplied, and ErrStale too when its
// fence is below the recorded one.
//
// Once does not refuse a writer superseded by a later slot's claim: runs
// of different slots of one job may overlap (overlap: allow, trigger,
// catch-up), and an earlier slot's run that commits after a later one's is
// no repeat. To refuse that too (overlap: replace, a table holding only
// the latest result), also call Check(ctx, tx, run.Job, run.Fence) in tx.
//
// A refusal raises an error in the database, which aborts tx: nothing
// written in it can commit (Commit returns pgx.ErrTxCommitRollback). Roll
// tx back. Call Once once per transaction: a second call for the same run
// in one transaction finds the first call's row and aborts tx. If Once
// runs in a nested transaction (a savepoint), the effect's writes must be
// in that same nested transaction.
//
// Concurrency. Under READ COMMITTED, PostgreSQL's default, a second
// transaction recording the same slot waits for the first (the row's
// primary key), then gets ErrApplied if the first committed, or records
// the slot and goes on if it rolled back: exactly one commits. Under
// REPEATABLE READ or SERIALIZABLE, a transaction whose snapshot predates
// the other's commit fails instead with SQLSTATE 40001
// (serialization_failure), as any conflicting write does there; retry the
// transaction, and the retry gets ErrApplied. Never do both commit. The
// row stays locked until tx ends, so keep such transactions short.
//
// Retention. The row is kept for p.Retain (DefaultRetain when zero) after
// the later of the call and the slot, by the database's clock. Under READ COMMITTED, each Once
// also deletes up to 16 expired rows that no other transaction holds, in
// tx, using an index on the expiry: the table prunes itself as jobs run.
// Under REPEATABLE READ or SERIALIZABLE it does not (deleting a row a
// concurrent transaction also deletes would fail tx); call Prune then,
// for instance from a daily job.
func (p PG) Once(ctx context.Context, tx pgx.Tx, run jobs.Run) error {
	if err := validateRun(run); err != nil {
		return err
	}
	retain, err := retention(p.Retain)
	if err != nil {
		return err
	}
	key := run.Key()
	op := fmt.Sprintf("once %s fence %d", key, run.Fence)
	sql := "SELECT " + pgx.Identifier{p.schema(), "fence_once"}.Sanitize() + "($1, $2, $3, $4)"
	_, err = tx.Exec(ctx, sql, key, run.Fence, run.Slot.UTC(), micros(retain))
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case appliedCode:
			e := &AppliedError{Resource: key, Key: key, Fence: run.Fence}
			if pgErr.Detail != "" {
				applied, perr := strconv.ParseInt(pgErr.Detail, 10, 64)
				if perr != nil {
					return fmt.Errorf("fence: %s: applied, fence unreadable (%q): %w", op, pgErr.Detail, ErrApplied)
				}
				e.Applied = applied
			}
			return refuse(p.Logger, run.Job, e)
		case "42883", "42P01", "3F000": // undefined function, table, schema
			return p.notEnsured(op, err)
		}
	}
	return fmt.Errorf("fence: %s: %w", op, err)
}

// OncePG is PG{}.Once: it records run's slot in DefaultSchema, keeps the
// record for DefaultRetain and logs refusals to slog.Default().
func OncePG(ctx context.Context, tx pgx.Tx, run jobs.Run) error {
	return PG{}.Once(ctx, tx, run)
}

// Prune deletes the records of Once whose retention has passed and that no
// transaction holds, and returns how many it deleted. Once prunes a few as
// it goes under READ COMMITTED; Prune is for transactions run under
// REPEATABLE READ or SERIALIZABLE, or to clear a backlog at once.
func (p PG) Prune(ctx context.Context, db Execer) (int64, error) {
	table := pgx.Identifier{p.schema(), "fence_applied"}.Sanitize()
	tag, err := db.Exec(ctx, "DELETE FROM "+table+" WHERE run_key IN (SELECT run_key FROM "+table+
		" WHERE keep_until < clock_timestamp() FOR UPDATE SKIP LOCKED)")
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
			return 0, p.notEnsured("prune", err)
		}
		return 0, fmt.Errorf("fence: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}

// micros returns d in whole microseconds, rounded up, so a positive
// retention never becomes zero.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
