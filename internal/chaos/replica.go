package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/etcd" // the replica program runs on every store kind
	_ "github.com/slotcron/slotcron/scheduler/postgres"
	_ "github.com/slotcron/slotcron/scheduler/redis"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// The settings only the replica program reads; the harness sets them in
// each replica's environment.
const (
	envEffects = "SLOTCRON_CHAOS_EFFECTS" // DSN of the checker's effects database
	envControl = "SLOTCRON_CHAOS_CONTROL" // the control directory
	envReplica = "SLOTCRON_REPLICA"       // the replica's name (the config reads it too)
	// envLedger is the DSN the ledger job's runs reach Postgres by, through
	// the replica's own proxy. The config names the variable rather than
	// the DSN, so every replica enrolls the one spec and each carries the
	// job (params are hashed as written).
	envLedger = "SLOTCRON_CHAOS_LEDGER_DSN"
)

// ReplicaMain is the replica program's main: it registers the chaos jobs
// as a user would and hands over to scheduler.Main, with a clock whose
// offset the harness sets through the control directory.
func ReplicaMain() {
	r := &replica{
		name:    os.Getenv(envReplica),
		ctl:     control{dir: os.Getenv(envControl)},
		effects: os.Getenv(envEffects),
	}
	reg := jobs.NewRegistry()
	reg.Register("work", r.work)
	reg.Register("complete", r.complete)
	go r.followClock()
	scheduler.Main(reg, scheduler.WithClock(r.now))
}

// replica is the state of one replica program.
type replica struct {
	name    string
	ctl     control
	effects string
	offset  atomic.Int64 // clock offset, nanoseconds

	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

func (r *replica) now() time.Time { return time.Now().Add(time.Duration(r.offset.Load())) }

// followClock keeps the clock offset in step with the control file.
func (r *replica) followClock() {
	for {
		if d, err := r.ctl.offset(r.name); err == nil {
			r.offset.Store(int64(d))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workParams are the params of the work job.
type workParams struct {
	Min, Max time.Duration // the work lasts between these, chosen per attempt
	// HonourCtx makes the job stop its work and write nothing when its
	// context ends; otherwise it works on and writes as a stale holder
	// would.
	HonourCtx bool `yaml:"honour_ctx"`
}

// work records its start unfenced, works, takes a fault armed for
// before-effect, then writes its effect three ways: through the
// once-per-slot helper, through the stale-only fence check, and unfenced.
// Then it takes a fault armed for after-effect.
func (r *replica) work(ctx context.Context, run jobs.Run) error {
	var p workParams
	if err := run.Params(&p); err != nil {
		return err
	}
	db, err := r.pool(ctx, r.effects)
	if err != nil {
		return err
	}
	// Effect writes outlive the job's context unless it honours it: a
	// stale holder's late write is what the fences are for.
	wctx := context.WithoutCancel(ctx)
	if p.HonourCtx {
		wctx = ctx
	}
	if err := record(wctx, db, "starts", run); err != nil {
		return err
	}
	select {
	case <-time.After(spread(run, p.Min, p.Max)):
	case <-ctx.Done():
		if p.HonourCtx {
			return ctx.Err()
		}
		<-time.After(spread(run, p.Min, p.Max))
	}
	// Frozen here past its lease, work that honours its context should
	// find it cancelled when it resumes, and write nothing.
	r.fault(pointBeforeEffect)
	// The last look at the context before the effect: the checker holds
	// it against the successor's start (guarantee 5).
	var checked time.Time
	if p.HonourCtx {
		if err := ctx.Err(); err != nil {
			return err
		}
		checked = time.Now()
	}
	wctx, cancel := context.WithTimeout(wctx, 10*time.Second)
	defer cancel()
	err = pgx.BeginFunc(wctx, db, func(tx pgx.Tx) error {
		if err := fence.OncePG(wctx, tx, run); err != nil {
			return err
		}
		return record(wctx, tx, "effect_once", run)
	})
	if err := r.refused(wctx, db, run, "once", err); err != nil {
		return err
	}
	err = pgx.BeginFunc(wctx, db, func(tx pgx.Tx) error {
		if err := fence.CheckPG(wctx, tx, run.Key(), run.Fence); err != nil {
			return err
		}
		return record(wctx, tx, "effect_fenced", run)
	})
	if err := r.refused(wctx, db, run, "fenced", err); err != nil {
		return err
	}
	if _, err := db.Exec(wctx, `INSERT INTO effect_plain (job, slot, fence, attempt, replica, checked) VALUES ($1, $2, $3, $4, $5, $6)`,
		run.Job, run.Slot, run.Fence, run.Attempt, run.Replica, nullTime(checked)); err != nil {
		return fmt.Errorf("chaos: record %s in effect_plain: %w", run.Key(), err)
	}
	r.fault(pointAfterEffect)
	return nil
}

// completeParams are the params of the complete job.
type completeParams struct {
	DSN      string        // the Postgres store's database
	Min, Max time.Duration // the work before the transaction
}

// complete writes its effect to the store's database and marks its slot
// succeeded in the same transaction (pgstore.CompleteTx). A fault armed
// in-tx freezes it inside that transaction, after CompleteTx and before the
// commit.
func (r *replica) complete(ctx context.Context, run jobs.Run) error {
	var p completeParams
	if err := run.Params(&p); err != nil {
		return err
	}
	effects, err := r.pool(ctx, r.effects)
	if err != nil {
		return err
	}
	if err := record(ctx, effects, "starts", run); err != nil {
		return err
	}
	store, err := r.pool(ctx, p.DSN)
	if err != nil {
		return err
	}
	select {
	case <-time.After(spread(run, p.Min, p.Max)):
	case <-ctx.Done():
		return ctx.Err()
	}
	return pgx.BeginFunc(ctx, store, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS chaos_complete (
			job text NOT NULL, slot timestamptz NOT NULL, fence bigint NOT NULL, attempt int NOT NULL,
			replica text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
			return err
		}
		if err := record(ctx, tx, "chaos_complete", run); err != nil {
			return err
		}
		if err := pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{}); err != nil {
			return err
		}
		// Frozen here, the transaction holds the slot's row locked until
		// the session's timeouts (the lease left) end it.
		r.fault(pointInTx)
		return nil
	})
}

// refused records a refusal by a fence helper and reports any other error.
func (r *replica) refused(ctx context.Context, db *pgxpool.Pool, run jobs.Run, style string, err error) error {
	if err == nil {
		return nil
	}
	var kind string
	switch {
	case errors.Is(err, fence.ErrApplied):
		kind = "applied"
	case errors.Is(err, fence.ErrStale):
		kind = "stale"
	default:
		return err
	}
	_, err = db.Exec(ctx, `INSERT INTO refusals (job, slot, fence, attempt, replica, style, kind) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		run.Job, run.Slot, run.Fence, run.Attempt, run.Replica, style, kind)
	return err
}

// fault takes the fault armed for this replica at point, if any.
func (r *replica) fault(point string) {
	switch r.ctl.take(r.name, point) {
	case actKill:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	case actStop:
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}

// record writes run's row to table, in a pool or a transaction.
func record(ctx context.Context, db fence.Execer, table string, run jobs.Run) error {
	_, err := db.Exec(ctx, `INSERT INTO `+table+` (job, slot, fence, attempt, replica) VALUES ($1, $2, $3, $4, $5)`,
		run.Job, run.Slot, run.Fence, run.Attempt, run.Replica)
	if err != nil {
		return fmt.Errorf("chaos: record %s in %s: %w", run.Key(), table, err)
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// spread is the length of run's work: between min and max, the same for
// every replica running the same attempt.
func spread(run jobs.Run, min, max time.Duration) time.Duration {
	if max <= min {
		return min
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", run.Key(), run.Attempt)
	return min + time.Duration(h.Sum64()%uint64(max-min))
}

func (r *replica) pool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pools[dsn]; ok {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	cfg.MaxConns = 8
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if r.pools == nil {
		r.pools = map[string]*pgxpool.Pool{}
	}
	r.pools[dsn] = p
	return p, nil
}
