package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// Postgres restarted while a replica runs a per-second job: claims fail
// meanwhile, no slot runs twice, and the replica runs slots again once the
// database is back.
func TestPostgresRestartRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres")
	}
	t.Parallel()
	pg := testserver.StartPostgres(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Options{DSN: pg.DSN(), StatementTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	rec := &recorder{}
	reg := jobs.NewRegistry()
	reg.Register("tick", rec.fn)
	stop := start(t, replica(t, st, "a", `jobs: {tick: {schedule: "*/1 * * * * *", lease: 2s, starting_deadline: 5s}}`, reg))
	defer stop()
	poll.Until(t, 30*time.Second, "running slots before the restart", func() error { return runsAtLeast(1, len(rec.snapshot())) })
	pg.Restart(t)
	restarted := time.Now()
	poll.Until(t, time.Minute, "running slots again after the restart", func() error {
		after := 0
		for _, ev := range rec.snapshot() {
			if ev.started.After(restarted) {
				after++
			}
		}
		return runsAtLeast(2, after)
	})
	stop()

	seen := map[time.Time]int{}
	for _, ev := range rec.snapshot() {
		seen[ev.run.Slot]++
	}
	for slot, n := range seen {
		if n != 1 {
			t.Errorf("slot %v ran %d times", slot, n)
		}
	}
}

// A job that completes its slot in its own transaction (CompleteTx) while a
// renewal waits on the marker's row is not told its lease was lost: the
// renewal finds the slot finished under its own fence, the job's context
// goes on, and no lease is counted lost.
func TestPostgresCompleteTxIsNotALostLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres")
	}
	t.Parallel()
	pg := testserver.StartPostgres(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Options{DSN: pg.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pool, err := pgxpool.New(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	var mu sync.Mutex
	var problems []string
	runs := 0
	reg := jobs.NewRegistry()
	reg.Register("j", func(ctx context.Context, run jobs.Run) error {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{}); err != nil {
				return err
			}
			// Hold the marker's row past a renewal (every lease/3 = 1 s).
			time.Sleep(1500 * time.Millisecond)
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		runs++
		if err != nil || ctx.Err() != nil {
			problems = append(problems, fmt.Sprintf("%s: err %v, context %v", run.Key(), err, context.Cause(ctx)))
		}
		return nil
	})
	metrics := prometheus.NewRegistry()
	stop := start(t, replica(t, st, "a", `jobs: {j: {schedule: "*/3 * * * * *", lease: 3s}}`, reg, WithRegistry(metrics)))
	defer stop()
	poll.Until(t, 30*time.Second, "three runs", func() error {
		mu.Lock()
		defer mu.Unlock()
		return runsAtLeast(3, runs)
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	// The renewal that waited on the row was in flight when the job
	// returned; the run's end waits for its answer, so the counters below
	// have seen it.
	if lost := counter(t, metrics, "slotcron_leases_lost_total", "job_name", "j"); lost != 0 {
		t.Errorf("%v leases counted lost", lost)
	}
	if ok := counter(t, metrics, "slotcron_runs_total", "job_name", "j", "outcome", "succeeded"); ok < 3 {
		t.Errorf("%v runs counted succeeded, want at least 3", ok)
	}
}
