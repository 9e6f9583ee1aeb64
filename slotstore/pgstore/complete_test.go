package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// runOf is the jobs.Run the engine would hand the winner of c, a claim on
// s.
func runOf(s *pgstore.Store, c slotstore.ClaimResult) jobs.Run {
	return jobs.Run{Job: c.Claim.Job, Slot: c.Claim.Slot, Fence: c.Claim.Fence, Attempt: c.Claim.Attempt, Replica: c.Marker.Holder}.
		WithStore(s)
}

// effects creates a table for a job's effects in the store's schema.
func effects(t *testing.T, pool *pgxpool.Pool, s *pgstore.Store) string {
	t.Helper()
	table := pgx.Identifier{s.Schema(), "effects"}.Sanitize()
	if _, err := pool.Exec(t.Context(), "CREATE TABLE "+table+" (run_key text PRIMARY KEY, fence bigint)"); err != nil {
		t.Fatal(err)
	}
	return table
}

// doJob runs run's transaction: insert its effect, complete the slot,
// commit. It returns CompleteTx's error, after rolling back.
func doJob(t *testing.T, pool *pgxpool.Pool, table string, run jobs.Run) error {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, $2) ON CONFLICT (run_key) DO UPDATE SET fence = excluded.fence",
		run.Key(), run.Fence); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{Duration: time.Second}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return nil
}

// effectFence returns the fence of the effect recorded for run, or 0.
func effectFence(t *testing.T, pool *pgxpool.Pool, table string, run jobs.Run) int64 {
	t.Helper()
	var fence int64
	err := pool.QueryRow(t.Context(), "SELECT fence FROM "+table+" WHERE run_key = $1", run.Key()).Scan(&fence)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return fence
}

// TestCompleteTx: a stale holder's completion fails and its effect rolls
// back; the current holder's effect and completion commit together; the
// engine's Finish afterwards is a no-op.
func TestCompleteTx(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	table := effects(t, pool, s)

	r := slotstore.ClaimRequest{Job: "invoices", Slot: slot(0), Lease: 200 * time.Millisecond}
	stale := claimOne(t, s, "r1", r)
	r.Lease = time.Minute
	var current slotstore.ClaimResult
	for current = claimOne(t, s, "r2", r); current.Status == slotstore.Held; current = claimOne(t, s, "r2", r) {
		time.Sleep(current.Remaining)
	}
	if current.Status != slotstore.Won || current.Claim.Fence <= stale.Claim.Fence {
		t.Fatalf("takeover: %+v", current)
	}

	if err := doJob(t, pool, table, runOf(s, stale)); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Fatalf("CompleteTx with the stale fence: %v, want ErrLeaseLost", err)
	}
	if f := effectFence(t, pool, table, runOf(s, stale)); f != 0 {
		t.Fatalf("the stale holder's effect committed (fence %d)", f)
	}
	if m := findMarker(t, s, r.Job, r.Slot); m.State != slotstore.StateRunning || m.Fence != current.Claim.Fence {
		t.Fatalf("marker after the stale completion: %+v", m)
	}

	if err := doJob(t, pool, table, runOf(s, current)); err != nil {
		t.Fatalf("CompleteTx with the current fence: %v", err)
	}
	if f := effectFence(t, pool, table, runOf(s, current)); f != current.Claim.Fence {
		t.Fatalf("effect fence %d, want %d", f, current.Claim.Fence)
	}
	done := findMarker(t, s, r.Job, r.Slot)
	if done.State != slotstore.StateDone || done.Outcome != slotstore.Succeeded || done.Fence != current.Claim.Fence ||
		done.Duration != time.Second || done.FinishedAt.IsZero() {
		t.Fatalf("marker after completion: %+v", done)
	}

	// The engine finishes the run as usual once the job returns: the slot
	// is already done under its fence, so Finish succeeds and changes
	// nothing.
	for _, o := range []slotstore.Outcome{slotstore.Succeeded, slotstore.Failed} {
		if err := s.Finish(ctx, slotstore.FinishParams{Ref: current.Claim.Ref, Outcome: o, Error: "late"}); err != nil {
			t.Errorf("engine's Finish (%s) after CompleteTx: %v, want nil", o, err)
		}
	}
	if m := findMarker(t, s, r.Job, r.Slot); m.Outcome != slotstore.Succeeded || m.Error != "" || !m.FinishedAt.Equal(done.FinishedAt) {
		t.Errorf("Finish after CompleteTx changed the marker: %+v", m)
	}
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: current.Claim.Ref, Lease: time.Minute}); !errors.Is(err, slotstore.ErrFinished) {
		t.Errorf("renew after CompleteTx: %v, want ErrFinished", err)
	}
	// A second completion would apply the effect twice: it fails.
	if err := doJob(t, pool, table, runOf(s, current)); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("second CompleteTx: %v, want ErrLeaseLost", err)
	}
	if res := claimOne(t, s, "r3", r); res.Status != slotstore.Finished {
		t.Errorf("claim after completion: %v", res.Status)
	}
}

// TestCompleteTxHoldsOffTakeover: a claim that starts while the job's
// transaction holds the completed marker waits for that transaction, then
// finds the slot done if it committed, or running under the old fence if
// it rolled back, and takes it over once the lease has expired. (The
// transaction cannot stay open past the lease: see
// TestCompleteTxFrozenHolder.)
func TestCompleteTxHoldsOffTakeover(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newStore(t)
			pool := newPool(t, testserver.SharedPostgres(t).DSN())
			r := slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: 3 * time.Second}
			won := claimOne(t, s, "r1", r)

			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if err := pgstore.CompleteTx(ctx, tx, runOf(s, won), pgstore.CompleteParams{}); err != nil {
				t.Fatalf("CompleteTx: %v", err)
			}
			type claimed struct {
				res slotstore.ClaimResult
				err error
			}
			next := make(chan claimed, 1)
			go func() {
				res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{r}})
				if err != nil {
					next <- claimed{err: err}
					return
				}
				next <- claimed{res: res[0]}
			}()
			waitForLockWait(t, pool, s.Schema())
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := <-next
			if got.err != nil {
				t.Fatalf("claim: %v", got.err)
			}
			if commit {
				if got.res.Status != slotstore.Finished {
					t.Errorf("claim after the job's transaction committed: %v, want finished", got.res.Status)
				}
				return
			}
			res := got.res
			if res.Status != slotstore.Held || res.Marker.Fence != won.Claim.Fence || res.Marker.Attempt != 1 {
				t.Fatalf("claim after the job's transaction rolled back: %+v, want held under the old fence", res)
			}
			for res.Status == slotstore.Held {
				time.Sleep(res.Remaining + 5*time.Millisecond)
				res = claimOne(t, s, "r2", r)
			}
			if res.Status != slotstore.Won || res.Claim.Attempt != 2 {
				t.Errorf("takeover after the job's transaction rolled back: %+v, want won, attempt 2", res)
			}
		})
	}
}

func TestCompleteTxInvalid(t *testing.T) {
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	s := newStore(t)
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	for name, run := range map[string]jobs.Run{
		"no fence":      jobs.Run{Job: "j", Slot: slot(0)}.WithStore(s),
		"no job":        jobs.Run{Slot: slot(0), Fence: 1}.WithStore(s),
		"no slot":       jobs.Run{Job: "j", Fence: 1}.WithStore(s),
		"no store":      {Job: "j", Slot: slot(0), Fence: 1},
		"another store": jobs.Run{Job: "j", Slot: slot(0), Fence: 1}.WithStore(mem),
	} {
		if err := pgstore.CompleteTx(t.Context(), tx, run, pgstore.CompleteParams{}); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
