package pgstore_test

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestMain shares one private cluster among the package's tests, stops it
// after them, and then checks that no goroutine outlived its test.
func TestMain(m *testing.M) { testserver.RunWithSharedPostgres(m) }

var schemas atomic.Int64

// freshSchema returns a schema name no other test uses.
func freshSchema() string { return fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1)) }

// newStore opens a store in a fresh schema of the shared cluster's
// postgres database and closes it when t ends.
func newStore(t testing.TB, edit ...func(*pgstore.Options)) *pgstore.Store {
	t.Helper()
	opts := pgstore.Options{DSN: testserver.SharedPostgres(t).DSN(), Schema: freshSchema(), PoolSize: 4}
	for _, e := range edit {
		e(&opts)
	}
	s, err := pgstore.Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newPool opens a pool on dsn and closes it when t ends.
func newPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// slot is a minute of the next hour: after the generation of any job of a
// fresh store began, and soon enough that the default retention keeps its
// markers.
func slot(i int) time.Time {
	return nextHour().Add(time.Duration(i) * time.Minute)
}

// nextHour is the start of the next hour at least a minute away (etcdstore's
// nextHour says why).
func nextHour() time.Time {
	return time.Now().Add(time.Minute).UTC().Truncate(time.Hour).Add(time.Hour)
}

func claimOne(t testing.TB, s slotstore.Store, replica string, r slotstore.ClaimRequest) slotstore.ClaimResult {
	t.Helper()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{r}})
	if err != nil {
		t.Fatalf("claim %s@%v by %s: %v", r.Job, r.Slot, replica, err)
	}
	return res[0]
}

// waitForLockWait waits until a session of the database waits for a lock
// while running the claim function of schema.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	waitForLockWaitIn(t, pool, schema, "claim")
}

// waitForLockWaitIn waits until a session of the database waits for a lock
// while running the function fn of schema.
func waitForLockWaitIn(t *testing.T, pool *pgxpool.Pool, schema, fn string) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("a %s to wait for a lock", fn), func() error {
		var n int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%' || $2 || '(%'`, schema, fn).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return errors.New("nobody waits")
		}
		return nil
	})
}

// findMarker returns the marker of job@at.
func findMarker(t *testing.T, s slotstore.Store, job string, at time.Time) slotstore.Marker {
	t.Helper()
	m, ok := find(t, s, job, at)
	if !ok {
		t.Fatalf("no marker for %s@%v", job, at)
	}
	return m
}

// find returns the marker of job@at, if there is one.
func find(t *testing.T, s slotstore.Store, job string, at time.Time) (slotstore.Marker, bool) {
	t.Helper()
	ms, err := s.History(t.Context(), slotstore.HistoryParams{Job: job, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Slot.Equal(at) {
			return m, true
		}
	}
	return slotstore.Marker{}, false
}
