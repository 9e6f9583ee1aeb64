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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultSchema holds the table and function of PG when PG.Schema is empty.
const DefaultSchema = "slotcron"

// staleCode is the SQLSTATE fence_check raises for a stale fence.
const staleCode = "SCF01"

//go:embed sql/ensure.sql
var ensureSQL string

// PG fences resources kept in PostgreSQL: Check, inside the caller's
// transaction, records the highest fence seen per resource name and
// rejects a lower one, so the caller's writes and the check commit or roll
// back together. Its zero value uses DefaultSchema and slog.Default; call
// Ensure once before the first Check. A PG is a value with no state of its
// own, safe for concurrent use.
type PG struct {
	// Schema holds the table fence_highest and the function fence_check.
	// Empty means DefaultSchema.
	Schema string
	// Logger receives a line for each rejection. Nil means slog.Default().
	Logger *slog.Logger
}

// Execer runs SQL: a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Ensure creates the schema, its table fence_highest and its function
// fence_check if they do not exist. It is safe to call from many replicas
// at once, and again at every start.
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
			return fmt.Errorf("fence: check %q fence %d: schema %q not set up (call PG.Ensure first): %w", resource, token, p.schema(), err)
		}
	}
	return fmt.Errorf("fence: check %q fence %d: %w", resource, token, err)
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
