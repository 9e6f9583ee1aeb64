package fence_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testserver"
)

// pgFence returns a pool on the shared cluster and a fence.PG in a schema
// of its own, ensured, with a table effects(resource, value, fence) for the
// writes the tests fence.
func pgFence(t testing.TB) (*pgxpool.Pool, fence.PG) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testserver.SharedPostgres(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	p := fence.PG{Schema: strings.ReplaceAll(unique("f"), "-", "_"), Logger: slog.New(slog.DiscardHandler)}
	if err := p.Ensure(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), "CREATE TABLE "+p.Schema+".effects (resource text, value text, fence bigint)"); err != nil {
		t.Fatal(err)
	}
	return pool, p
}

// write checks token for resource and inserts value in one transaction.
func write(ctx context.Context, pool *pgxpool.Pool, p fence.PG, resource string, token int64, value string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := p.Check(ctx, tx, resource, token); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+p.Schema+".effects VALUES ($1, $2, $3)", resource, value, token)
		return err
	})
}

// effects lists the values written for resource, in fence order.
func effects(t testing.TB, pool *pgxpool.Pool, p fence.PG, resource string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), "SELECT value FROM "+p.Schema+".effects WHERE resource = $1 ORDER BY fence, value", resource)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPGCheck(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	for _, w := range []struct {
		token   int64
		value   string
		highest int64 // 0: accepted
	}{
		{5, "a", 0}, {5, "b", 0}, {4, "stale", 5}, {9, "c", 0}, {8, "stale", 9},
	} {
		err := write(ctx, pool, p, "ledger", w.token, w.value)
		if w.highest == 0 {
			if err != nil {
				t.Fatalf("fence %d: %v", w.token, err)
			}
			continue
		}
		wantStale(t, err, "ledger", w.token, w.highest)
	}
	if got := strings.Join(effects(t, pool, p, "ledger"), ","); got != "a,b,c" {
		t.Errorf("effects %s, want a,b,c", got)
	}
}

// A caller that ignores the rejection and commits still writes nothing: the
// check aborted the transaction.
func TestPGRejectionAbortsTransaction(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	if err := write(ctx, pool, p, "r", 10, "first"); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO "+p.Schema+".effects VALUES ('r', 'before the check', 3)"); err != nil {
		t.Fatal(err)
	}
	wantStale(t, p.Check(ctx, tx, "r", 3), "r", 3, 10)
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("commit after a rejection: %v, want pgx.ErrTxCommitRollback", err)
	}
	if got := effects(t, pool, p, "r"); len(got) != 1 || got[0] != "first" {
		t.Errorf("effects %v, want [first]", got)
	}
}

// Two transactions checking one resource take turns: the second waits for
// the first and is judged against what it committed.
func TestPGConcurrentChecks(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	hi, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hi.Rollback(ctx)
	if err := p.Check(ctx, hi, "r", 20); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- write(ctx, pool, p, "r", 19, "late") }()
	select {
	case err := <-done:
		t.Fatalf("the lower fence did not wait for the open transaction: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := hi.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wantStale(t, <-done, "r", 19, 20)
}

func TestPGEnsureConcurrently(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), testserver.SharedPostgres(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p := fence.PG{Schema: strings.ReplaceAll(unique("e"), "-", "_")}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- p.Ensure(t.Context(), pool) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Ensure: %v", err)
		}
	}
}

func TestPGNotEnsured(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), testserver.SharedPostgres(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	err = pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return fence.PG{Schema: "never_ensured"}.Check(t.Context(), tx, "r", 1)
	})
	if err == nil || !strings.Contains(err.Error(), "PG.Ensure") {
		t.Fatalf("check in a schema never ensured: %v, want advice to call PG.Ensure", err)
	}
}
