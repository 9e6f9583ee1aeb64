package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultSchema holds the table and function of PG when PG.Schema is empty.
const DefaultSchema = "slotcron"

// The SQLSTATEs the functions raise: fence_check for a stale fence,
// fence_once for a slot whose effect was already committed.
const (
	staleCode   = "SCF01"
	appliedCode = "SCF02"
)

//go:embed sql/ensure.sql
var ensureSQL string

// PG fences resources kept in PostgreSQL, inside the caller's transaction,
// so the caller's writes and the check commit or roll back together: Check
// records the highest fence seen per resource name and rejects a lower one;
// Once records a slot's effect and refuses it a second time. Its zero value
// uses DefaultSchema, DefaultRetain and slog.Default; call Ensure once
// before the first Check or Once. A PG is a value with no state of its own,
// safe for concurrent use.
type PG struct {
	// Schema holds the tables fence_highest and fence_applied and the
	// functions fence_check and fence_once. Empty means DefaultSchema.
	Schema string
	// Logger receives a line for each rejection and each refused repeat.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Retain is how long Once keeps the record of a slot's effect, at
	// least, counted from the later of the call and the slot, by the
	// database's clock; Prune and later calls of Once delete it after.
	// Set it to at least the job's history. Zero means DefaultRetain
	// (7 days); a negative value is an error (ErrInvalid).
	Retain time.Duration
}

// Execer runs SQL: a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Ensure creates the schema, its tables fence_highest and fence_applied
// and its functions fence_check and fence_once if they do not exist, and
// replaces the functions, so a schema ensured by an older version gains
// what Once needs. It is safe to call from many replicas at once, and
// again at every start.
func (p PG) Ensure(ctx context.Context, db Execer) error {
	schema := p.schema()
	h := fnv.New64a()
	h.Write([]byte("slotcron/fence\x00" + schema))
	sql := strings.NewReplacer(
		"{schema}", pgx.Identifier{schema}.Sanitize(),
		"{lock}", strconv.FormatInt(int64(h.Sum64()), 10),
	).Replace(ensureSQL)
	if _, err := db.Exec(ctx, sql); err != nil {
		return fmt.Errorf("fence: ensure schema %q: %w", schema, err)
	}
	return nil
}

// Check records token as the highest fence seen for resource, inside tx,
// and returns nil; or, when resource has seen a higher fence, returns a
// *StaleError wrapping ErrStale. An equal fence is accepted.
//
// A rejection raises an error in the database, which aborts tx: nothing
// written in it can commit (Commit returns pgx.ErrTxCommitRollback), so a
// caller that ignores the error still writes nothing. Roll tx back. To go
// on with other work after a rejection, check inside a nested transaction
// (tx.Begin, a savepoint).
//
// The row of resource stays locked until tx ends, so concurrent writers of
// one resource take turns; keep such transactions short. Under REPEATABLE
// READ or SERIALIZABLE a concurrent check of the same resource may fail
// with a serialization error instead, which the caller retries as usual.
func (p PG) Check(ctx context.Context, tx pgx.Tx, resource string, token int64) error {
	if err := validate(resource, token); err != nil {
		return err
	}
	sql := "SELECT " + pgx.Identifier{p.schema(), "fence_check"}.Sanitize() + "($1, $2)"
	var seen int64
	err := tx.QueryRow(ctx, sql, resource, token).Scan(&seen)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case staleCode:
			highest, perr := strconv.ParseInt(pgErr.Detail, 10, 64)
			if perr != nil {
				return fmt.Errorf("fence: check %q fence %d: stale, highest unreadable (%q): %w", resource, token, pgErr.Detail, ErrStale)
			}
			return reject(p.Logger, resource, token, highest)
		case "42883", "42P01", "3F000": // undefined function, table, schema
			return p.notEnsured(fmt.Sprintf("check %q fence %d", resource, token), err)
		}
	}
	return fmt.Errorf("fence: check %q fence %d: %w", resource, token, err)
}

// notEnsured is the error of an operation that found no function, table or
// schema (SQLSTATE 42883, 42P01, 3F000).
func (p PG) notEnsured(op string, err error) error {
	return fmt.Errorf("fence: %s: schema %q not set up (call PG.Ensure first): %w", op, p.schema(), err)
}

// CheckPG is PG{}.Check: it checks token against resource in
// DefaultSchema and logs rejections to slog.Default().
func CheckPG(ctx context.Context, tx pgx.Tx, resource string, token int64) error {
	return PG{}.Check(ctx, tx, resource, token)
}

func (p PG) schema() string {
	if p.Schema == "" {
		return DefaultSchema
	}
	return p.Schema
}
