package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrationFiles holds the schema's versions: migrations/NNNN_name.sql
// moves the schema's tables (and types) from version NNNN-1 to NNNN. A
// migration changes tables only; functions live in functions/ (see
// functionFiles). Append files; never change what one a released build
// has applied does to the tables. {schema} in a file stands for the
// store's quoted schema name.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded migrations in version order; loading them
// fails only for a broken build.
var migrations = mustLoadMigrations()

func mustLoadMigrations() []migration {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("pgstore: migration file without a version: " + e.Name())
		}
		body, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("pgstore: migration %s: want version %d", m.name, i+1))
		}
	}
	return out
}

// SchemaVersion is the schema version this build creates and understands.
func SchemaVersion() int { return len(migrations) }

// advisoryKey derives a 64-bit advisory lock key from the purpose and the
// schema name, so stores in different schemas of one database do not
// contend.
func advisoryKey(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("slotcron/pgstore " + purpose + " " + schema))
	return int64(h.Sum64())
}

// migrate brings the schema to SchemaVersion and its functions to this
// build's texts, in one transaction that holds a transaction-scoped
// advisory lock: replicas starting together queue on the lock, the first
// applies the migrations (tables), then the function files whose text the
// schema lacks (functions.go), and the others find nothing left to do. The
// lock ends with the transaction, so a failed migration cannot leave it
// held. Whether there is anything to do is read from schema_migrations and
// the catalogs (the functions' comments), which need no privilege beyond
// the tables': a schema with nothing to do is left without any DDL, so a
// role with USAGE on the schema and the tables' DML may open it. Where
// there is something to do, a role that may not do it gets an error
// saying who must (privilegeError).
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback(context.Background())
	q := quote(s.schema)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", advisoryKey("migrate", s.schema)); err != nil {
		return fmt.Errorf("migrate schema %s: lock: %w", s.schema, err)
	}
	have, err := schemaVersion(ctx, tx, q)
	if err != nil {
		return fmt.Errorf("migrate schema %s: read version: %w", s.schema, err)
	}
	if have > len(migrations) {
		return fmt.Errorf("migrate schema %s: version %d is newer than this build's %d", s.schema, have, len(migrations))
	}
	records, err := readFunctions(ctx, tx, s.schema)
	if err != nil {
		return fmt.Errorf("migrate schema %s: read functions: %w", s.schema, err)
	}
	todo, err := functionsToApply(records)
	if err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, err)
	}
	if have == len(migrations) && len(todo) == 0 {
		return nil
	}
	if err := migrateTables(ctx, tx, s.schema, have); err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, privilegeError(err, have, todo))
	}
	if err := applyFunctions(ctx, tx, q, todo); err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, privilegeError(err, have, todo))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate schema %s: commit: %w", s.schema, err)
	}
	return nil
}

// migrateTables creates the schema and its bookkeeping table if missing,
// and applies the migrations after version have, in tx. CREATE SCHEMA runs
// only for a schema that does not exist: Postgres checks CREATE on the
// database before it looks whether the schema exists, and the schema's
// owner need not have it. It drops schema_functions, where a build that
// was never released recorded the function files before their comments
// did (functions.go).
func migrateTables(ctx context.Context, tx pgx.Tx, schema string, have int) error {
	q := quote(schema)
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regnamespace($1) IS NOT NULL", q).Scan(&exists); err != nil {
		return fmt.Errorf("look for the schema: %w", err)
	}
	var ddl []string
	if !exists {
		ddl = append(ddl, "CREATE SCHEMA "+q)
	}
	ddl = append(ddl,
		"CREATE TABLE IF NOT EXISTS "+q+`.schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`,
		"DROP TABLE IF EXISTS "+q+".schema_functions")
	for _, sql := range ddl {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	for _, m := range migrations[have:] {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(m.sql, "{schema}", q)); err != nil {
			return fmt.Errorf("to version %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+q+".schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("record version %d: %w", m.version, err)
		}
	}
	return nil
}

// schemaVersion returns the version recorded in the schema's
// schema_migrations table, or 0 when there is no such table.
func schemaVersion(ctx context.Context, tx pgx.Tx, q string) (int, error) {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", q+".schema_migrations").Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+q+".schema_migrations").Scan(&v)
	return v, err
}

// privilegeError explains err, when it is Postgres's "insufficient
// privilege" (SQLSTATE 42501), as what to do: the schema lacks this
// build's tables (its version have) or the function texts of todo, and
// only the schema's owner, or a role with CREATE on the database when the
// schema does not exist yet, may write them. Other errors are returned as
// they are.
func privilegeError(err error, have int, todo []function) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		return err
	}
	var lacks []string
	if have < len(migrations) {
		lacks = append(lacks, fmt.Sprintf("schema version %d (it is at %d)", len(migrations), have))
	}
	for _, f := range todo {
		lacks = append(lacks, fmt.Sprintf("functions/%s.sql version %d", f.name, f.version))
	}
	return fmt.Errorf("this build needs %s, which this role may not apply: start this build once as the schema's owner "+
		"(or, while the schema does not exist, as a role with CREATE on the database), then as this role, which needs only "+
		"USAGE on the schema and SELECT, INSERT, UPDATE, DELETE on its tables: %w",
		strings.Join(lacks, ", "), err)
}
