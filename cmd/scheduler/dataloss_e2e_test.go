package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
)

// effectsParams are the params of the effects job.
type effectsParams struct {
	DSN  string        `yaml:"dsn"`
	Work time.Duration `yaml:"work"`
}

var (
	effectsMu    sync.Mutex
	effectsPools = map[string]*pgxpool.Pool{}
)

// effects is the job the fault tests run: it records every start
// (unfenced), works for params.work honouring ctx, and writes its effect
// through the once-per-slot helper, in a Postgres database the test owns
// and the faults never touch.
func effects(ctx context.Context, run jobs.Run) error {
	var p effectsParams
	if err := run.Params(&p); err != nil {
		return err
	}
	effectsMu.Lock()
	pool, ok := effectsPools[p.DSN]
	if !ok {
		var err error
		if pool, err = pgxpool.New(context.Background(), p.DSN); err != nil {
			effectsMu.Unlock()
			return err
		}
		effectsPools[p.DSN] = pool
	}
	effectsMu.Unlock()
	if _, err := pool.Exec(ctx, `INSERT INTO starts (run_key, fence, replica, attempt) VALUES ($1, $2, $3, $4)`,
		run.Key(), run.Fence, run.Replica, run.Attempt); err != nil {
		return err
	}
	select {
	case <-time.After(p.Work):
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := fence.OncePG(ctx, tx, run); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO once_effects (run_key, fence, replica) VALUES ($1, $2, $3)`,
			run.Key(), run.Fence, run.Replica)
		return err
	})
	if errors.Is(err, fence.ErrApplied) {
		return nil
	}
	return err
}

// Redis killed and restarted empty, twice, under three replicas running a
// per-second and a ten-second job: every slot's effect through the
// once-per-slot helper appears exactly once, no slot starts afresh twice,
// and none starts after its effect was committed — the store's new
// generation refuses the slots from before each loss.
func TestRedisRestartedEmptyRunsNoSlotTwice(t *testing.T) {
	skipShort(t)
	r := testserver.StartRedis(t)
	pg := testserver.StartPostgres(t)
	ctx := t.Context()
	db, err := pgxpool.New(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := (fence.PG{}).Ensure(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE starts (run_key text, fence bigint, replica text, attempt int,
			at timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE TABLE once_effects (run_key text, fence bigint, replica text,
			at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
		t.Fatal(err)
	}
	jobsYAML := fmt.Sprintf(`  tick: {run: effects, schedule: "* * * * * *", lease: 2s, params: {dsn: %[1]q, work: 200ms}}
  ten: {run: effects, schedule: "*/10 * * * * *", lease: 2s, catch_up: all, params: {dsn: %[1]q, work: 3s}}
`, pg.DSN())
	config := writeConfig(t, fmt.Sprintf("{kind: redis, redis: {addr: %q}}", r.Addr()), jobsYAML)
	procs := []*proc{startReplica(t, "r0", config), startReplica(t, "r1", config), startReplica(t, "r2", config)}
	for _, p := range procs {
		p.waitFor(t, "scheduler started", 10*time.Second)
	}
	start := time.Now()
	for i := range 2 {
		time.Sleep(12 * time.Second)
		r.Restart(t) // kill -9; no persistence: it comes back empty
		t.Logf("redis restarted empty at %s", time.Since(start).Round(time.Millisecond))
		// A replica restarted right after the loss catches up (catch_up:
		// all for ten): the slots it finds without a marker must not run.
		procs[i].stop(t)
		procs[i] = startReplica(t, fmt.Sprintf("r%d-again", i), config)
	}
	recovered := time.Now().Add(5 * time.Second).Truncate(time.Second)
	time.Sleep(time.Until(recovered.Add(12 * time.Second)))
	for _, p := range procs {
		p.stop(t)
	}

	count := func(query string) map[string]int {
		rows, err := db.Query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var k string
			return k, r.Scan(&k)
		})
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, k := range out {
			n[k]++
		}
		return n
	}
	// A slot may start again when its holder hands it over (a replica the
	// test stops releases its running slots, and another takes them over,
	// attempt 2): that is a takeover, not a repeat. What a store that lost
	// its data would do is start a slot afresh — attempt 1 again — or start
	// it after its effect was committed.
	starts, applied := count(`SELECT run_key FROM starts`), count(`SELECT run_key FROM once_effects`)
	fresh := count(`SELECT run_key FROM starts WHERE attempt = 1`)
	after := count(`SELECT s.run_key FROM starts s JOIN once_effects e USING (run_key) WHERE s.at > e.at`)
	for k, n := range applied {
		if n != 1 {
			t.Errorf("%s: %d effects through the once-per-slot helper, want 1", k, n)
		}
	}
	for k, n := range fresh {
		if n != 1 {
			t.Errorf("%s started afresh (attempt 1) %d times, want once", k, n)
		}
	}
	for k := range after {
		t.Errorf("%s started again after its effect was committed", k)
	}
	// Liveness: after the last loss, every slot runs again.
	for s := recovered; s.Before(recovered.Add(10 * time.Second)); s = s.Add(time.Second) {
		if k := "tick@" + s.UTC().Format(time.RFC3339); applied[k] != 1 {
			t.Errorf("%s: %d effects after recovery, want 1", k, applied[k])
		}
	}
	takeovers := 0
	for _, n := range starts {
		takeovers += n - 1
	}
	t.Logf("%d slots started, %d effects applied, %d takeovers of handed-over slots", len(starts), len(applied), takeovers)
}
