package pgstore

import (
	"context"
	"embed"
	"fmt"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/testserver"
)

// oldMigrations are the migration files as the builds up to commit 8e30ad2
// shipped them, each claim text written out whole, and the schemas the
// builds of version 9 (commit 90428df), 10 (commit b65f0d0) and 11 (commit
// 9635b10) left: each one's migration, then its function files with their
// records. So they
// are the schema those builds left, at every version, for the upgrade
// tests. They are fixtures, named .sql.txt so that nothing takes them for
// the product's SQL.
//
//go:embed testdata/schema8e30ad2/*.sql.txt
var oldMigrations embed.FS

// oldVersions is the newest version the fixtures hold: the previous
// build's. Version 12, the actions log, is this build's own.
const oldVersions = 11

// buildOldSchema creates schema at version as a build of that version
// left it: the old migration files 1 to version, applied in order in one
// transaction and recorded in schema_migrations, as that build's migrate
// did.
func buildOldSchema(ctx context.Context, pool *pgxpool.Pool, schema string, version int) error {
	entries, err := oldMigrations.ReadDir("testdata/schema8e30ad2")
	if err != nil {
		return err
	}
	if version > len(entries) {
		return fmt.Errorf("no old schema of version %d", version)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	q := quote(schema)
	if _, err := tx.Exec(ctx, "CREATE SCHEMA "+q+"; CREATE TABLE "+q+`.schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	for i, e := range entries[:version] {
		body, err := oldMigrations.ReadFile(path.Join("testdata/schema8e30ad2", e.Name()))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, strings.ReplaceAll(string(body), "{schema}", q)); err != nil {
			return fmt.Errorf("old migration %s: %w", e.Name(), err)
		}
		name := strings.TrimSuffix(e.Name(), ".txt")
		if _, err := tx.Exec(ctx, "INSERT INTO "+q+".schema_migrations (version, name) VALUES ($1, $2)", i+1, name); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

var internalSchemas atomic.Int64

// newInternalStore returns a store on a fresh schema of the shared
// cluster, not yet migrated, whose pool closes and schema is dropped when
// t ends.
func newInternalStore(t *testing.T, name string) *Store {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testserver.SharedPostgres(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("%s_%d_%d", name, os.Getpid(), internalSchemas.Add(1))
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+quote(schema)+" CASCADE")
		pool.Close()
	})
	return &Store{pool: pool, schema: schema, q: newQueries(quote(schema))}
}

// internalStore returns a store on a fresh schema of the current version.
func internalStore(t *testing.T, name string) *Store {
	t.Helper()
	s := newInternalStore(t, name)
	if err := s.migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// oldStore returns a store on a fresh schema that the build of version
// left (buildOldSchema), not yet migrated by this build.
func oldStore(t *testing.T, name string, version int) *Store {
	t.Helper()
	s := newInternalStore(t, name)
	if err := buildOldSchema(t.Context(), s.pool, s.schema, version); err != nil {
		t.Fatalf("old schema of version %d: %v", version, err)
	}
	return s
}
