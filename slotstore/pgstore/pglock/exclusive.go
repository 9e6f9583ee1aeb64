package pglock

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RunExclusive runs fn in a transaction on pool while holding the
// transaction-scoped advisory lock key, and commits the transaction if fn
// returns nil. It never waits for the lock: if another session holds it,
// fn does not run and RunExclusive returns false and nil. The lock is
// released when the transaction ends, so it cannot outlive the call, not
// even when fn fails or panics or the connection breaks.
//
// ran reports whether fn ran. When fn returns an error the transaction is
// rolled back and the error returned as is; when the commit fails, ran is
// true and the error wraps the commit's.
func RunExclusive(ctx context.Context, pool *pgxpool.Pool, key int64, fn func(ctx context.Context, tx pgx.Tx) error) (ran bool, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("pglock: exclusive %d: begin: %w", key, err)
	}
	// After a commit this does nothing; otherwise it ends the transaction
	// and with it the lock, also when fn panics. If ctx has ended, pgx
	// closes the connection instead, and the server ends the transaction.
	defer tx.Rollback(ctx)

	var got bool
	if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", key).Scan(&got); err != nil {
		return false, fmt.Errorf("pglock: exclusive %d: lock: %w", key, err)
	}
	if !got {
		return false, nil
	}
	if err := fn(ctx, tx); err != nil {
		return true, err
	}
	if err := tx.Commit(ctx); err != nil {
		return true, fmt.Errorf("pglock: exclusive %d: commit: %w", key, err)
	}
	return true, nil
}
