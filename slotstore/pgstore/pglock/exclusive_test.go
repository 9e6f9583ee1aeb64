package pglock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore/pgstore/pglock"
)

// TestRunExclusive: the lock is held while fn runs, keeps others out, and
// is gone when RunExclusive returns, whether fn succeeded, failed or
// panicked.
func TestRunExclusive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = 7002
	pool := newPool(t, e.dsn, 2)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (n int)"); err != nil {
		t.Fatal(err)
	}

	ran, err := pglock.RunExclusive(ctx, pool, key, func(ctx context.Context, tx pgx.Tx) error {
		e.wantHeld(t, "inside fn", key, 1)
		other, err := pglock.RunExclusive(ctx, pool, key, func(context.Context, pgx.Tx) error {
			t.Error("a second RunExclusive ran while the first held the lock")
			return nil
		})
		if other || err != nil {
			t.Errorf("second RunExclusive: ran %v, %v; want false, nil", other, err)
		}
		_, err = tx.Exec(ctx, "INSERT INTO effects VALUES (1)")
		return err
	})
	if !ran || err != nil {
		t.Fatalf("RunExclusive: ran %v, %v", ran, err)
	}
	e.wantHeld(t, "after a committed run", key, 0)

	boom := errors.New("boom")
	ran, err = pglock.RunExclusive(ctx, pool, key, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO effects VALUES (2)"); err != nil {
			return err
		}
		return boom
	})
	if !ran || !errors.Is(err, boom) {
		t.Fatalf("failing fn: ran %v, %v", ran, err)
	}
	e.wantHeld(t, "after a failed run", key, 0)

	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic did not propagate")
			}
		}()
		pglock.RunExclusive(ctx, pool, key, func(context.Context, pgx.Tx) error { panic("fn panicked") })
	}()
	e.wantHeld(t, "after a panicking run", key, 0)

	var got []int32
	rows, _ := pool.Query(ctx, "SELECT n FROM effects ORDER BY n")
	got, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(got) != 1 || got[0] != 1 {
		t.Errorf("effects %v, %v; want only the committed run's", got, err)
	}
}
