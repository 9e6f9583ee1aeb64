package fence_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/jobs"
)

// Two holders of one slot, a stale one and a fresh one, record it at the
// same moment, again and again: each time exactly one commits, and the
// other is told the effect exists.
func TestPGOnceConcurrentHolders(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	job := unique("race")
	slot := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const rounds = 50
	for i := range rounds {
		s := slot.Add(time.Duration(i) * time.Minute)
		holders := []jobs.Run{runOf(job, s, int64(2*i+1), 1), runOf(job, s, int64(2*i+2), 2)}
		start := make(chan struct{})
		errs := make([]error, len(holders))
		var wg sync.WaitGroup
		for h, run := range holders {
			wg.Go(func() {
				errs[h] = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, "SELECT 1"); err != nil { // the transaction is open
						return err
					}
					<-start
					if err := p.Once(ctx, tx, run); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, "INSERT INTO "+p.Schema+".effects VALUES ($1, $2, $3)", run.Key(), fmt.Sprint(run.Fence), run.Fence)
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for h, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, fence.ErrApplied):
				t.Fatalf("round %d, holder with fence %d: %v", i, holders[h].Fence, err)
			}
		}
		if got := effects(t, pool, p, holders[0].Key()); won != 1 || len(got) != 1 {
			t.Fatalf("round %d: %d holders committed, effects %v; want exactly one", i, won, got)
		}
	}
}

// backendPID returns the server process of tx's connection.
func backendPID(t *testing.T, tx pgx.Tx) int32 {
	t.Helper()
	var pid int32
	if err := tx.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitLocked returns once the server process pid waits for a lock.
func waitLocked(t *testing.T, pool *pgxpool.Pool, pid int32) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("backend %d to wait for a lock", pid), func() error {
		var waiting bool
		err := pool.QueryRow(t.Context(), "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if !waiting {
			return errors.New("it does not wait for a lock")
		}
		return nil
	})
}

// Under READ COMMITTED the second holder waits for the first's transaction
// and is judged by how it ended: refused if it committed, free to record
// the slot if it rolled back.
func TestPGOnceWaitsForTheOtherHolder(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	job := unique("wait")
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("first commits=%v", commit), func(t *testing.T) {
			slot := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			if !commit {
				slot = slot.Add(time.Hour)
			}
			stale, fresh := runOf(job, slot, 10, 1), runOf(job, slot, 11, 2)
			first, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Rollback(ctx)
			if err := p.Once(ctx, first, fresh); err != nil {
				t.Fatal(err)
			}
			second, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer second.Rollback(ctx)
			pid := backendPID(t, second)
			done := make(chan error, 1)
			go func() { done <- p.Once(ctx, second, stale) }()
			waitLocked(t, pool, pid)
			if commit {
				if err := first.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				wantApplied(t, <-done, stale.Key(), stale.Key(), 10, 11)
				return
			}
			if err := first.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("after the first holder rolled back: %v", err)
			}
			if err := second.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var applied int64
			if err := pool.QueryRow(ctx, "SELECT fence FROM "+p.Schema+".fence_applied WHERE run_key = $1", stale.Key()).Scan(&applied); err != nil || applied != 10 {
				t.Fatalf("recorded fence %d (%v), want 10", applied, err)
			}
		})
	}
}

// Under REPEATABLE READ and SERIALIZABLE a holder whose snapshot predates
// the other's commit fails with a serialization error, never commits, and
// its retry is refused as a repeat.
func TestPGOnceSnapshotIsolation(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	job := unique("iso")
	for i, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			slot := time.Date(2026, 6, 1, i, 0, 0, 0, time.UTC)
			a, b := runOf(job, slot, 20, 1), runOf(job, slot, 21, 2)
			opts := pgx.TxOptions{IsoLevel: iso}
			late, err := pool.BeginTx(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer late.Rollback(ctx)
			if _, err := late.Exec(ctx, "SELECT 1"); err != nil { // takes the snapshot
				t.Fatal(err)
			}
			if err := pgx.BeginTxFunc(ctx, pool, opts, func(tx pgx.Tx) error { return p.Once(ctx, tx, a) }); err != nil {
				t.Fatal(err)
			}
			err = p.Once(ctx, late, b)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
				t.Fatalf("once on an older snapshot: %v, want SQLSTATE 40001", err)
			}
			if err := late.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
				t.Fatalf("commit after the serialization failure: %v", err)
			}
			err = pgx.BeginTxFunc(ctx, pool, opts, func(tx pgx.Tx) error { return p.Once(ctx, tx, b) })
			wantApplied(t, err, b.Key(), b.Key(), 21, 20)
		})
	}
}
