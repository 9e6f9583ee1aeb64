package pgstore_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestMigrateOnceConcurrently: replicas starting together against an empty
// schema all open it, and the migrations and functions are applied once. Without the advisory
// lock, concurrent CREATE SCHEMA and CREATE TABLE statements fail with
// unique violations in the catalogs.
func TestMigrateOnceConcurrently(t *testing.T) {
	t.Parallel()
	dsn := testserver.SharedPostgres(t).DSN()
	schema := freshSchema()
	const replicas = 8
	stores := make([]*pgstore.Store, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema, PoolSize: 2})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	pool := newPool(t, dsn)
	var rows, versions, applied int
	err := pool.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version), count(DISTINCT applied_at)
		FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&rows, &versions, &applied)
	if err != nil {
		t.Fatal(err)
	}
	if want := pgstore.SchemaVersion(); rows != want || versions != want || applied != 1 {
		t.Errorf("schema_migrations: %d rows, %d versions, %d transactions; want %d, %d, 1", rows, versions, applied, want, want)
	}
	// The functions were applied once, in the migrations' transaction:
	// their records, the comments, were written by it.
	var fns int
	err = pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE d.xmin::text <> m.xmin::text)
		FROM pg_proc p JOIN pg_description d ON d.objoid = p.oid AND d.classoid = 'pg_proc'::regclass,
		(SELECT xmin FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` LIMIT 1) m
		WHERE p.pronamespace = $1::regnamespace AND d.description LIKE 'slotcron functions/%'`,
		pgx.Identifier{schema}.Sanitize()).Scan(&fns, &applied)
	if err != nil {
		t.Fatal(err)
	}
	if fns == 0 || applied != 0 {
		t.Errorf("function records: %d, %d written in another transaction than the migrations'", fns, applied)
	}
	// Every replica works on the one schema.
	for i, s := range stores {
		if s == nil {
			continue
		}
		res := claimOne(t, s, "r", slotstore.ClaimRequest{Job: "m", Slot: slot(0), Lease: time.Minute})
		if (i == 0) != (res.Status == slotstore.Won) && res.Status != slotstore.Held {
			t.Errorf("replica %d: %v", i, res.Status)
		}
	}
}

// TestReopen: markers and fences outlive the store that wrote them, and
// opening an up-to-date schema changes nothing.
func TestReopen(t *testing.T) {
	t.Parallel()
	dsn := testserver.SharedPostgres(t).DSN()
	opts := pgstore.Options{DSN: dsn, Schema: freshSchema()}
	s, err := pgstore.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	first := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute})
	s.Close()

	s, err = pgstore.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res := claimOne(t, s, "r2", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute}); res.Status != slotstore.Held {
		t.Errorf("claim of a held slot after reopening: %v", res.Status)
	}
	next := claimOne(t, s, "r2", slotstore.ClaimRequest{Job: "j", Slot: slot(1), Lease: time.Minute})
	if next.Status != slotstore.Won || next.Claim.Fence <= first.Claim.Fence {
		t.Errorf("claim after reopening: %v fence %d, want won with a fence above %d", next.Status, next.Claim.Fence, first.Claim.Fence)
	}
}

// TestNewerSchema: a schema migrated by a newer build is refused, not
// misread.
func TestNewerSchema(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	_, err := pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{s.Schema(), "schema_migrations"}.Sanitize()+
		" (version, name) VALUES (99, '0099_future.sql')")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := pgstore.New(t.Context(), pool, pgstore.Options{Schema: s.Schema()})
	if err == nil {
		s2.Close()
		t.Fatal("opened a schema at version 99")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %q does not say the schema is newer", err)
	}
}

// TestNew: the store uses the caller's pool and leaves it open.
func TestNew(t *testing.T) {
	t.Parallel()
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	s, err := pgstore.New(t.Context(), pool, pgstore.Options{Schema: freshSchema()})
	if err != nil {
		t.Fatal(err)
	}
	claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(t.Context(), slotstore.HistoryParams{}); !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("history after close: %v, want ErrClosed", err)
	}
	if err := pool.Ping(t.Context()); err != nil {
		t.Errorf("the caller's pool after Close: %v", err)
	}
}

func TestOpenAndNewInvalid(t *testing.T) {
	t.Parallel()
	dsn := testserver.SharedPostgres(t).DSN()
	for name, opts := range map[string]pgstore.Options{
		"empty DSN":          {},
		"negative pool size": {DSN: dsn, PoolSize: -1},
		"negative timeout":   {DSN: dsn, StatementTimeout: -time.Second},
		"long schema":        {DSN: dsn, Schema: strings.Repeat("s", 64)},
		"long timeout":       {DSN: dsn, StatementTimeout: pgstore.MaxStatementTimeout + time.Millisecond},
	} {
		if s, err := pgstore.Open(t.Context(), opts); !errors.Is(err, slotstore.ErrInvalid) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := pgstore.New(t.Context(), nil, pgstore.Options{}); !errors.Is(err, slotstore.ErrInvalid) {
		t.Errorf("nil pool: %v, want ErrInvalid", err)
	}
	pool := newPool(t, dsn)
	_, err := pgstore.New(t.Context(), pool, pgstore.Options{DSN: dsn, PoolSize: 2})
	if !errors.Is(err, slotstore.ErrInvalid) || !strings.Contains(err.Error(), "dsn, pool_size given") {
		t.Errorf("connection settings beside a pool: %v, want ErrInvalid naming them", err)
	}
}

// TestOpenRedactsDSN: errors from Open never show the DSN's password.
func TestOpenRedactsDSN(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pw"
	for _, dsn := range []string{
		"postgres://slot:" + secret + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://slot@127.0.0.1:1/db?password=" + secret + "&sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 user=slot password=" + secret + " sslmode=disable connect_timeout=2",
		"host=127.0.0.1 port=1 password='" + secret + " x' sslmode=disable connect_timeout=2",
		"postgres://slot:" + secret + "@127.0.0.1:notaport/db",
		"host=127.0.0.1 port=x password=" + secret,
	} {
		s, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn})
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", dsn)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
