package pgstore_test

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// A job that writes to the database holding the slot store commits its
// effect and the slot's completion in one transaction. If the slot was
// taken over meanwhile, CompleteTx fails, and the effect rolls back with
// the transaction. The run the scheduler hands the job carries the store
// it claimed the slot from, so CompleteTx knows the store's schema.
func ExampleCompleteTx() {
	pool, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		return
	}
	defer pool.Close()

	invoices := func(ctx context.Context, run jobs.Run) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `INSERT INTO invoices (run_key, fence) VALUES ($1, $2)`, run.Key(), run.Fence)
		if err != nil {
			return err
		}
		if err := pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{}); err != nil {
			return err // slotstore.ErrLeaseLost: another replica holds the slot now
		}
		return tx.Commit(ctx)
	}
	reg := jobs.NewRegistry()
	reg.Register("invoices", invoices)
}
