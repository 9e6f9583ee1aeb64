package pglock_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/testserver"
)

func TestMain(m *testing.M) { testserver.RunWithSharedPostgres(m) }

// env is a database of the shared cluster for one test, with an observer
// pool that reads pg_locks from its own connections.
type env struct {
	dsn      string
	observer *pgxpool.Pool
}

func newEnv(t *testing.T) env {
	t.Helper()
	dsn := testserver.SharedPostgres(t).CreateDatabase(t)
	return env{dsn: dsn, observer: newPool(t, dsn, 2)}
}

func newPool(t *testing.T, dsn string, size int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = size
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func connConfig(t *testing.T, dsn string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// holders returns the backend pids holding advisory lock key in the env's
// database, and how many sessions wait for it.
func (e env) holders(t *testing.T, key int64) (pids []int32, waiting int) {
	t.Helper()
	rows, err := e.observer.Query(t.Context(), `SELECT pid, granted FROM pg_locks
		WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1`,
		int64(uint64(key)>>32), int64(uint32(key)))
	if err != nil {
		t.Fatalf("pg_locks: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var granted bool
		if err := rows.Scan(&pid, &granted); err != nil {
			t.Fatal(err)
		}
		if granted {
			pids = append(pids, pid)
		} else {
			waiting++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pids, waiting
}

// wantHeld fails the test unless exactly n sessions hold key.
func (e env) wantHeld(t *testing.T, what string, key int64, n int) []int32 {
	t.Helper()
	pids, _ := e.holders(t, key)
	if len(pids) != n {
		t.Fatalf("%s: %d sessions hold advisory lock %d (pids %v), want %d", what, len(pids), key, pids, n)
	}
	return pids
}

// eventually polls cond every few milliseconds for up to five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
