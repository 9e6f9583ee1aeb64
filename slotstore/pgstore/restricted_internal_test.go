package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestRestrictedRole: a role with USAGE on the schema and the tables' DML,
// and nothing else, cannot bring a schema that a build from before the
// function records (8e30ad2, version 8) left up to date: it gets an error
// that says who must, and the schema is left as it was. Once the schema's
// owner has opened it with this build, that role opens it, with no DDL,
// and claims and finishes a slot.
func TestRestrictedRole(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	owner := oldStore(t, "restricted", 8) // 8e30ad2's
	// Granted before this build's first start: what this build needs
	// afterwards is only what the earlier build's schema already had.
	pool := restrictedPool(t, owner)

	_, err := New(ctx, pool, Options{Schema: owner.schema})
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(err.Error(), "as the schema's owner") {
		t.Fatalf("restricted role on the schema of 8e30ad2: %v; want a privilege error that says what to do", err)
	}
	if records, err := owner.records(ctx); err != nil || len(records) != 0 {
		t.Fatalf("records after the refused start: %v, %v; want none", records, err)
	}

	if err := owner.migrate(ctx); err != nil {
		t.Fatalf("the owner's start: %v", err)
	}
	s, err := New(ctx, pool, Options{Schema: owner.schema})
	if err != nil {
		t.Fatalf("restricted role after the owner's start: %v", err)
	}
	defer s.Close()
	at := time.Now().Add(time.Minute).UTC().Truncate(time.Hour).Add(time.Hour)
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{{Job: "j", Slot: at, Lease: time.Minute}}})
	if err != nil || res[0].Status != slotstore.Won {
		t.Fatalf("claim by the restricted role: %v, %v", res, err)
	}
	if err := s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatalf("finish by the restricted role: %v", err)
	}
	var state string
	if err := owner.pool.QueryRow(ctx, "SELECT state FROM "+quote(owner.schema)+".markers WHERE job = 'j'").Scan(&state); err != nil || state != "done" {
		t.Errorf("the slot's marker: %q, %v; want done", state, err)
	}
}

// records returns the function records of s's schema.
func (s *Store) records(ctx context.Context) (map[string]applied, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background())
	return readFunctions(ctx, tx, s.schema)
}

var restrictedRoles atomic.Int64

// restrictedPool creates a role with USAGE on owner's schema and SELECT,
// INSERT, UPDATE and DELETE on its tables, and nothing more, and returns a
// pool that connects as it. The pool closes, and the role is dropped,
// when t ends.
func restrictedPool(t *testing.T, owner *Store) *pgxpool.Pool {
	t.Helper()
	ctx := t.Context()
	role := fmt.Sprintf("restricted_%d_%d", os.Getpid(), restrictedRoles.Add(1))
	q := quote(owner.schema)
	t.Cleanup(func() {
		owner.pool.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE IF EXISTS "+role)
	})
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA " + q + " TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + q + " TO " + role,
	} {
		if _, err := owner.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	dsn := testserver.SharedPostgres(t).DSN()
	dsn = strings.Replace(dsn, "postgres://postgres@", "postgres://"+role+"@", 1)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
