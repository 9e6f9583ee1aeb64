package pgleader

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

// DefaultSchema holds the table of leases when Options.Schema is empty:
// the Postgres store's default, so one database serves both.
const DefaultSchema = "slotcron"

// Options configure New.
type Options struct {
	// DSN says how to connect, as pgxpool.ParseConfig reads it (a URL or
	// key=value pairs; pool_* settings, which the Postgres store's DSN may
	// carry, are ignored). Required unless ConnConfig is set.
	DSN string
	// ConnConfig, when set, says how to connect instead of DSN: pass the
	// Postgres store's pool's (Pool().Config().ConnConfig), so the elector
	// connects as the store does, hooks and TLS included. New copies it.
	ConnConfig *pgx.ConnConfig
	// Schema holds the table of leases, created if missing. Empty means
	// DefaultSchema.
	Schema string
	// Logger receives the elector's lines. Nil means slog.Default().
	Logger *slog.Logger
}

// New checks that the database answers, creates the schema and its table
// leaders if they do not exist, and returns an Elector whose every
// campaign holds a dedicated connection (never a pooled one) for as long
// as it runs. Errors never include the password.
func New(ctx context.Context, o Options) (leader.Elector, error) {
	var cfg *pgx.ConnConfig
	if o.ConnConfig != nil {
		cfg = o.ConnConfig.Copy()
	} else {
		pc, err := pgxpool.ParseConfig(o.DSN)
		if err != nil {
			return nil, fmt.Errorf("pgleader: parse DSN: %w", err)
		}
		cfg = pc.ConnConfig
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "slotcron leader"
	}
	d := &backend{cfg: cfg, schema: o.Schema, sql: statementsFor(o.Schema)}
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgleader: connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, d.sql.ensure); err != nil {
		return nil, fmt.Errorf("pgleader: create schema %q: %w", o.Schema, err)
	}
	return driver.NewElector(d, driver.Options{Logger: o.Logger}), nil
}

// backend is the driver.Driver of PostgreSQL.
type backend struct {
	cfg    *pgx.ConnConfig
	schema string
	sql    statements
}

// Open connects a session of its own and listens for releases, so that a
// release is never missed between a held Acquire and the Wait after it.
func (d *backend) Open(ctx context.Context, name, holder string) (driver.Session, error) {
	conn, err := pgx.ConnectConfig(ctx, d.cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgleader: %s: connect to %s:%d: %w", name, d.cfg.Host, d.cfg.Port, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("pgleader: %s: listen: %w", name, err)
	}
	key := lockKey(d.schema, name)
	return &session{conn: conn, sql: &d.sql, name: name, holder: holder, key: key}, nil
}
