package demo

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// LedgerParams are the params of the ledger job.
type LedgerParams struct {
	// DSN of the database that holds both the ledger and the slot store.
	DSN string `yaml:"dsn"`
	// Schema of the Postgres store; default pgstore.DefaultSchema.
	Schema string `yaml:"schema"`
}

// Ledger shows transactional completion on the Postgres store: it writes one
// row per slot and marks the slot succeeded in the same transaction. If this
// replica's claim was taken over meanwhile, CompleteTx refuses, the
// transaction rolls back, and the row is never written: the effect happens
// once per slot, not merely the start. Its zero value is ready to use.
type Ledger struct {
	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
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
	pool, err := l.pool(ctx, p.DSN)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS slotcron_demo_ledger (
			run_key text PRIMARY KEY, fence bigint NOT NULL, replica text NOT NULL,
			written_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("ledger: create table: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO slotcron_demo_ledger (run_key, fence, replica) VALUES ($1, $2, $3)`,
			run.Key(), run.Fence, run.Replica); err != nil {
			return fmt.Errorf("ledger: insert: %w", err)
		}
		var opts []pgstore.CompleteOption
		if p.Schema != "" {
			opts = append(opts, pgstore.InSchema(p.Schema))
		}
		// Last, just before the commit: the slot is marked succeeded only
		// if this run's fence is still the slot's, atomically with the row.
		return pgstore.CompleteTx(ctx, tx, run, opts...)
	})
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
