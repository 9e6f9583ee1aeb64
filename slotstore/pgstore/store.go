package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.Store = (*Store)(nil)

const (
	// DefaultSchema holds the store's tables when Options.Schema is empty.
	DefaultSchema = "slotcron"
	// DefaultStatementTimeout bounds every statement of a store made by
	// Open when Options.StatementTimeout is zero.
	DefaultStatementTimeout = 10 * time.Second
)

// Store is a slotstore.Store kept in PostgreSQL. It is safe for concurrent
// use by many goroutines and by many processes sharing a database and
// schema. Its zero value is not usable; call Open or New.
type Store struct {
	pool    *pgxpool.Pool
	owned   bool // Close closes pool
	schema  string
	q       queries
	secrets []string // passwords of the DSN, scrubbed from errors
	closed  atomic.Bool
	stop    chan struct{} // closed by Close: ends the watches (watch.go)
}

// Open connects to the database opts.DSN names, creates or migrates the
// schema, and returns a store that owns its connection pool: Close closes
// it. Options that Validate refuses are an error wrapping
// slotstore.ErrInvalid and Validate's error.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: options: %w: %w", slotstore.ErrInvalid, err)
	}
	secrets := secretsOf(opts.DSN)
	cfg, err := pgxpool.ParseConfig(opts.DSN)
	if err != nil {
		return nil, scrub(fmt.Errorf("pgstore: parse DSN %s: %w", redact(opts.DSN), err), secrets)
	}
	if opts.PoolSize > 0 {
		cfg.MaxConns = int32(min(opts.PoolSize, 1<<20))
	}
	params := cfg.ConnConfig.RuntimeParams
	switch {
	case opts.StatementTimeout > 0:
		params["statement_timeout"] = strconv.FormatInt(max(opts.StatementTimeout.Milliseconds(), 1), 10)
	case params["statement_timeout"] == "":
		params["statement_timeout"] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
	}
	// Claims rely on each statement seeing what committed before it.
	params["default_transaction_isolation"] = "read committed"
	if params["application_name"] == "" {
		params["application_name"] = "slotcron"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrub(fmt.Errorf("pgstore: connect to %s: %w", redact(opts.DSN), err), secrets)
	}
	s, err := open(ctx, pool, opts.Schema, secrets)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", redact(opts.DSN), err)
	}
	s.owned = true
	return s, nil
}

// New creates or migrates the schema opts.Schema names (empty means
// DefaultSchema) in pool's database and returns a store that uses pool, a
// pool the caller made and still owns: Close leaves it open. opts' other
// settings are about connecting, and must be empty: the pool's own apply.
// Its connections must run at isolation level read committed, the server's
// default; their statement timeout is the pool's own. Bad options are an
// error wrapping slotstore.ErrInvalid.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("pgstore: %w: nil pool", slotstore.ErrInvalid)
	}
	var conn []string
	for key, set := range map[string]bool{"dsn": opts.DSN != "", "pool_size": opts.PoolSize != 0,
		"statement_timeout": opts.StatementTimeout != 0} {
		if set {
			conn = append(conn, key)
		}
	}
	if len(conn) > 0 {
		slices.Sort(conn)
		return nil, fmt.Errorf("pgstore: options: %w: %s given, but New uses the pool it is given", slotstore.ErrInvalid,
			strings.Join(conn, ", "))
	}
	s, err := open(ctx, pool, opts.Schema, nil)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	return s, nil
}

func open(ctx context.Context, pool *pgxpool.Pool, schema string, secrets []string) (*Store, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	if err := checkSchema(schema); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, schema: schema, q: newQueries(quote(schema)), secrets: secrets, stop: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		return nil, scrub(err, secrets)
	}
	return s, nil
}

// checkSchema refuses names PostgreSQL would truncate or cannot hold.
func checkSchema(schema string) error {
	if msg := schemaProblem(schema); msg != "" {
		return fmt.Errorf("%w: schema name %q %s", slotstore.ErrInvalid, schema, msg)
	}
	return nil
}

// schemaProblem says why PostgreSQL cannot hold schema as named, or is "".
func schemaProblem(schema string) string {
	if len(schema) > 63 {
		return "is longer than 63 bytes"
	}
	if strings.IndexByte(schema, 0) >= 0 {
		return "holds a NUL byte"
	}
	return ""
}

// quote returns name as a quoted SQL identifier.
func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// Schema returns the schema holding the store's tables.
func (s *Store) Schema() string { return s.schema }

// Pool returns the store's connection pool, for what shares its database
// (the duties' elector connects as the pool does). Callers must not close it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close marks the store closed and, if Open made its pool, closes the
// pool, waiting for calls in flight. It is safe to call more than once;
// every other method called after it returns an error wrapping
// slotstore.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.stop != nil {
		close(s.stop)
	}
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// conn checks that the store is open and acquires a connection. Failing to
// acquire one means no request was sent, so its error is a plain one.
func (s *Store) conn(ctx context.Context, op string) (*pgxpool.Conn, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrClosed)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		if s.closed.Load() {
			return nil, fmt.Errorf("pgstore: %s: %w: %w", op, slotstore.ErrClosed, err)
		}
		return nil, scrub(fmt.Errorf("pgstore: %s: acquire a connection: %w", op, err), s.secrets)
	}
	return c, nil
}
