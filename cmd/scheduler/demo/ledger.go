package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// LedgerParams are the params of the ledger job.
type LedgerParams struct {
	// DSN of the database that holds the ledger and, with effect
	// "complete", the slot store.
	DSN string `yaml:"dsn"`
	// Effect is how the row is written once per slot; default
	// LedgerComplete.
	Effect LedgerEffect `yaml:"effect"`
}

// LedgerEffect is how the ledger job writes its row once per slot.
type LedgerEffect string

const (
	// LedgerComplete writes the row and marks the slot succeeded in one
	// transaction (pgstore.CompleteTx): the store must be Postgres, in
	// the ledger's database.
	LedgerComplete LedgerEffect = "complete"
	// LedgerOnce records the slot with the row (fence.OncePG), for a
	// ledger kept apart from the store: SQLite, Redis, etcd or another
	// database.
	LedgerOnce LedgerEffect = "once"
)

// Ledger writes one row per slot to a Postgres table, once, whoever runs
// the slot and however often. Its zero value is ready to use.
//
// With effect "complete" (the default) the row and the slot's completion
// commit in one transaction: if this replica's claim was taken over
// meanwhile, CompleteTx refuses, the transaction rolls back, and the row is
// never written, so the effect happens once per slot, not merely the
// start.
//
// With effect "once" the slot store lives elsewhere, so the completion
// cannot join the transaction; fence.OncePG records the run key with the
// row instead. A holder that wrote the row and died before its slot was
// recorded finished is taken over, and its successor's run finds the slot
// recorded (fence.ErrApplied), writes nothing and returns nil, as does a
// superseded holder that wakes after the newer one wrote. The fence schema
// is ensured in the database at the job's first run.
type Ledger struct {
	mu      sync.Mutex
	pools   map[string]*pgxpool.Pool
	ensured map[string]bool // DSNs whose fence schema is ensured
}

// Run is the job's Func.
func (l *Ledger) Run(ctx context.Context, run jobs.Run) error {
	var p LedgerParams
	if err := run.Params(&p); err != nil {
		return err
	}
	if p.DSN == "" {
		return fmt.Errorf("ledger: params.dsn is required")
	}
	switch p.Effect {
	case "":
		p.Effect = LedgerComplete
	case LedgerComplete, LedgerOnce:
	default:
		return fmt.Errorf("ledger: params.effect %q: want %q or %q", p.Effect, LedgerComplete, LedgerOnce)
	}
	pool, err := l.pool(ctx, p.DSN)
	if err != nil {
		return err
	}
	if p.Effect == LedgerComplete {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := writeRow(ctx, tx, run); err != nil {
				return err
			}
			// Last, just before the commit: the slot is marked succeeded
			// only if this run's fence is still the slot's, atomically
			// with the row, in the store the run was claimed from.
			return pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{})
		})
	}
	if err := l.ensure(ctx, p.DSN, pool); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// First: a repeat of the slot is refused before it writes, and the
		// refusal aborts the transaction.
		if err := fence.OncePG(ctx, tx, run); err != nil {
			return err
		}
		return writeRow(ctx, tx, run)
	})
	if errors.Is(err, fence.ErrApplied) {
		return nil // the slot's row is written: by an earlier attempt, or a newer holder
	}
	return err
}

// writeRow creates the ledger's table if need be and writes run's row.
func writeRow(ctx context.Context, tx pgx.Tx, run jobs.Run) error {
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS slotcron_demo_ledger (
		run_key text PRIMARY KEY, fence bigint NOT NULL, replica text NOT NULL,
		written_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("ledger: create table: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO slotcron_demo_ledger (run_key, fence, replica) VALUES ($1, $2, $3)`,
		run.Key(), run.Fence, run.Replica); err != nil {
		return fmt.Errorf("ledger: insert: %w", err)
	}
	return nil
}

// ensure creates the fence schema in the database of dsn, once per Ledger.
func (l *Ledger) ensure(ctx context.Context, dsn string, pool *pgxpool.Pool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ensured[dsn] {
		return nil
	}
	if err := (fence.PG{}).Ensure(ctx, pool); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if l.ensured == nil {
		l.ensured = map[string]bool{}
	}
	l.ensured[dsn] = true
	return nil
}

func (l *Ledger) pool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.pools[dsn]; ok {
		return p, nil
	}
	p, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect: %w", err) // pgxpool's errors do not carry the password
	}
	if l.pools == nil {
		l.pools = map[string]*pgxpool.Pool{}
	}
	l.pools[dsn] = p
	return p, nil
}

// Close closes the pools the job opened.
func (l *Ledger) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for dsn, p := range l.pools {
		p.Close()
		delete(l.pools, dsn)
	}
}
