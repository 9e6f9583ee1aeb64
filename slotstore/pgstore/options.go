package pgstore

import (
	"errors"
	"math"
	"time"

	"github.com/slotcron/slotcron/internal/optkey"
)

// MaxStatementTimeout is the longest Options.StatementTimeout: PostgreSQL
// holds statement_timeout in milliseconds in a 32-bit integer, about 24
// days and 20 hours, and refuses a connection that asks for more.
const MaxStatementTimeout = math.MaxInt32 * time.Millisecond

// Options configures Open; New, which takes a pool the caller made, reads
// only Schema. The zero value of every field but DSN means its default. It is the store.postgres block of the YAML configuration: each
// field's tag is its key there, and Validate names the keys of the
// settings it refuses.
type Options struct {
	// DSN is the connection string: a postgres:// URL or libpq
	// keyword/value pairs, with pgxpool settings such as pool_max_conns
	// allowed. Required. Errors never show its passwords.
	DSN string `yaml:"dsn"`
	// Schema holds the store's tables and is created if it does not exist.
	// Empty means DefaultSchema.
	Schema string `yaml:"schema"`
	// PoolSize is the most connections the store opens. Zero means the
	// DSN's pool_max_conns, or else pgxpool's default: the greater of 4 and
	// the number of CPUs.
	PoolSize int `yaml:"pool_size"`
	// StatementTimeout is the server-side statement_timeout of the store's
	// connections, at most MaxStatementTimeout. Zero means the DSN's
	// statement_timeout, or else DefaultStatementTimeout.
	StatementTimeout time.Duration `yaml:"statement_timeout"`
}

// Validate reports every setting of o that Open would refuse before it
// connects, as errors.Join of errors each naming the setting's YAML key
// ("dsn: ...", "pool_size: ..."). It returns nil when Open may try o. It
// does not parse the DSN (Open's error says what is wrong with one), and
// never shows it.
func (o Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, optkey.Errorf(key, format, args...)) }
	if o.DSN == "" {
		bad("dsn", "is empty: want a postgres:// URL or libpq keyword/value pairs")
	}
	if msg := schemaProblem(o.Schema); msg != "" {
		bad("schema", "%q %s", o.Schema, msg)
	}
	if o.PoolSize < 0 {
		bad("pool_size", "must not be negative")
	}
	switch {
	case o.StatementTimeout < 0:
		bad("statement_timeout", "must not be negative")
	case o.StatementTimeout > MaxStatementTimeout:
		bad("statement_timeout", "%v is longer than %v, the longest PostgreSQL accepts", o.StatementTimeout, MaxStatementTimeout)
	}
	return errors.Join(errs...)
}
