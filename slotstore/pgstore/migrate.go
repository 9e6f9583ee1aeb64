package pgstore

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
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
// held. A schema with nothing to do is left without any DDL, so a role
// without CREATE may open it.
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
	records, err := readFunctions(ctx, tx, q)
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
	if err := migrateTables(ctx, tx, q, have); err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, err)
	}
	if err := applyFunctions(ctx, tx, q, todo); err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate schema %s: commit: %w", s.schema, err)
	}
	return nil
}

// migrateTables creates the schema and its bookkeeping tables if missing,
// and applies the migrations after version have, in tx.
func migrateTables(ctx context.Context, tx pgx.Tx, q string, have int) error {
	ddl := []string{
		"CREATE SCHEMA IF NOT EXISTS " + q,
		"CREATE TABLE IF NOT EXISTS " + q + `.schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`,
		"CREATE TABLE IF NOT EXISTS " + q + `.schema_functions (
			name       text PRIMARY KEY,
			version    integer NOT NULL,
			sha256     text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`,
	}
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
