package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// lockedTakeover claims job@at for r1 under a short lease, waits for the
// lease to end, and locks the marker's row in a transaction of pool that
// stays open until t ends: a takeover then waits for that lock. It returns
// the first claim.
func lockedTakeover(t *testing.T, s *pgstore.Store, pool *pgxpool.Pool, job string, at time.Time) slotstore.ClaimResult {
	t.Helper()
	first := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: at, Lease: 50 * time.Millisecond})
	waitLeaseEnd(t, s, first.Marker)
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	tag, err := tx.Exec(t.Context(), "SELECT FROM "+pgx.Identifier{s.Schema(), "markers"}.Sanitize()+
		" WHERE job = $1 FOR UPDATE", job)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("lock the marker: %v, %v", tag, err)
	}
	return first
}

// waitLeaseEnd waits until the lease of m, a running marker, has ended by
// the database's clock: it polls a Skip of m's slot, which leaves a slot
// that has a marker alone and answers Held with the lease time that
// remains, until none does.
func waitLeaseEnd(t *testing.T, s slotstore.Store, m slotstore.Marker) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("the lease of %s@%v to end", m.Job, m.Slot), func() error {
		res, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "probe", Requests: []slotstore.SkipRequest{
			{Job: m.Job, Slot: m.Slot, Reason: "probe", NotBefore: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}}})
		switch {
		case err != nil:
			t.Fatalf("probe of %s@%v: %v", m.Job, m.Slot, err)
		case res[0].Status != slotstore.Held:
			t.Fatalf("probe of %s@%v: %v, want held", m.Job, m.Slot, res[0].Status)
		case res[0].Remaining > 0:
			return fmt.Errorf("%v remain", res[0].Remaining)
		}
		return nil
	})
}

// claimsInServer counts the claims of the store in schema that the server
// is running, for clients other than pool's connection itself.
func claimsInServer(t *testing.T, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%' || $1 || '%claim(%'`,
		schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClaimDeadlineBoundsLockWaits: a claim whose context has a deadline
// waits for a lock, server-side, no longer than until shortly before the
// deadline. It then fails with a definite error (lock_not_available), not
// an unknown outcome; no claim is left waiting in the server after it
// returns, and it wrote nothing.
func TestClaimDeadlineBoundsLockWaits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	at := slot(0)
	first := lockedTakeover(t, s, pool, "j", at)

	const wait = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	t0 := time.Now()
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{
		{Job: "j", Slot: at, Lease: time.Minute},
	}})
	took := time.Since(t0)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		t.Fatalf("claim of a locked marker: %+v, want a lock timeout", res)
	case errors.Is(err, slotstore.ErrOutcomeUnknown):
		t.Errorf("claim after %v: %v, want a definite failure", took, err)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("claim after %v: %v, want it to say it ran into its deadline", took, err)
	case !errors.As(err, &pgErr) || (pgErr.Code != "55P03" && pgErr.Code != "57014"):
		t.Errorf("claim after %v: %v, want SQLSTATE 55P03 or 57014 (lock or statement timeout)", took, err)
	}
	if took >= wait {
		t.Errorf("claim returned after %v, its deadline %v", took, wait)
	}

	if waiting := claimsInServer(t, pool, s.Schema()); waiting != 0 {
		t.Errorf("%d claims still in the server after the client returned", waiting)
	}
	var fence int64
	if err := pool.QueryRow(t.Context(), "SELECT fence FROM "+pgx.Identifier{s.Schema(), "fences"}.Sanitize()+
		" WHERE job = 'j'").Scan(&fence); err != nil {
		t.Fatal(err)
	}
	if m := findMarker(t, s, "j", at); m.Holder != "r1" || m.Attempt != 1 || m.Fence != first.Claim.Fence ||
		fence != first.Claim.Fence {
		t.Errorf("after the timed-out claim: marker %+v, job's fence %d; want r1's, fence %d", m, fence, first.Claim.Fence)
	}
}

// TestClaimLockTimeoutSetting: the lock_timeout a claim with a deadline
// sets lasts for the claim's transaction only, and a tighter one of the
// session's own stays in force.
func TestClaimLockTimeoutSetting(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	onePool := func(lockTimeout string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(testserver.SharedPostgres(t).DSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = 1
		if lockTimeout != "" {
			cfg.ConnConfig.RuntimeParams["lock_timeout"] = lockTimeout
		}
		pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	show := func(pool *pgxpool.Pool) string {
		t.Helper()
		var v string
		if err := pool.QueryRow(t.Context(), "SHOW lock_timeout").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	t.Run("transaction only", func(t *testing.T) {
		pool := onePool("")
		s1, err := pgstore.New(ctx, pool, pgstore.Options{Schema: s.Schema()})
		if err != nil {
			t.Fatal(err)
		}
		defer s1.Close()
		var stmt string
		if err := pool.QueryRow(t.Context(), "SHOW statement_timeout").Scan(&stmt); err != nil {
			t.Fatal(err)
		}
		res, err := s1.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
			{Job: "free", Slot: slot(0), Lease: time.Minute},
		}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim: %+v, %v", res, err)
		}
		if v := show(pool); v != "0" {
			t.Errorf("the session's lock_timeout after a claim with a deadline: %s, want 0", v)
		}
		var after string
		if err := pool.QueryRow(t.Context(), "SHOW statement_timeout").Scan(&after); err != nil || after != stmt {
			t.Errorf("the session's statement_timeout after a claim with a deadline: %s (%v), want %s", after, err, stmt)
		}
	})
	t.Run("session's tighter", func(t *testing.T) {
		pool := onePool("300ms")
		s1, err := pgstore.New(ctx, pool, pgstore.Options{Schema: s.Schema()})
		if err != nil {
			t.Fatal(err)
		}
		defer s1.Close()
		at := slot(0)
		lockedTakeover(t, s, newPool(t, testserver.SharedPostgres(t).DSN()), "locked", at)
		t0 := time.Now()
		_, err = s1.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{
			{Job: "locked", Slot: at, Lease: time.Minute},
		}})
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" || errors.Is(err, slotstore.ErrOutcomeUnknown) {
			t.Errorf("claim of a locked marker after %v: %v, want a definite lock timeout", time.Since(t0), err)
		}
		if took := time.Since(t0); took > 5*time.Second {
			t.Errorf("claim waited %v under the session's 300ms lock_timeout", took)
		}
		if v := show(pool); v != "300ms" {
			t.Errorf("the session's lock_timeout after the claim: %s, want 300ms", v)
		}
	})
}

// A claim whose lock waits each end within the bound but add up past the
// deadline is stopped by the server at the deadline too, not only each
// wait: two takeovers whose markers are locked, released at 0.5 s and 1.2 s,
// a 1 s deadline, and a cancel request that never reaches the server (the
// client's dials fail, as through a blackholed connection). Nothing is won
// after the client gave up.
func TestClaimDeadlineBoundsTheWholeClaim(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	dsn := testserver.SharedPostgres(t).DSN()
	lockers := newPool(t, dsn)
	at := slot(0)
	var txs []pgx.Tx
	for _, job := range []string{"a", "b"} {
		first := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: at, Lease: 50 * time.Millisecond})
		waitLeaseEnd(t, s, first.Marker)
		tx, err := lockers.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		if _, err := tx.Exec(t.Context(), "SELECT FROM "+pgx.Identifier{s.Schema(), "markers"}.Sanitize()+
			" WHERE job = $1 FOR UPDATE", job); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	var cut atomic.Bool
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if cut.Load() {
			return nil, errors.New("test: cut off")
		}
		return dial(ctx, network, addr)
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s2, err := pgstore.New(t.Context(), pool, pgstore.Options{Schema: s.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Pauses(t.Context()); err != nil { // its one connection, dialled
		t.Fatal(err)
	}
	cut.Store(true) // no cancel request reaches the server
	var unlocks sync.WaitGroup
	defer unlocks.Wait() // before the cleanups roll the same transactions back
	for i, after := range []time.Duration{500 * time.Millisecond, 1200 * time.Millisecond} {
		unlocks.Go(func() {
			time.Sleep(after)
			txs[i].Rollback(context.Background())
		})
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	t0 := time.Now()
	_, err = s2.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{
		{Job: "a", Slot: at, Lease: time.Minute, TakeoverOnly: true},
		{Job: "b", Slot: at, Lease: time.Minute, TakeoverOnly: true},
	}})
	if err == nil {
		t.Fatal("the claim won with its markers locked past its deadline")
	}
	// Once both locks are gone and no claim of the store is left in the
	// server, a claim that outlived its client would have won.
	unlocks.Wait()
	poll.Until(t, 10*time.Second, "the server to end the claim its client gave up", func() error {
		if n := claimsInServer(t, lockers, s.Schema()); n != 0 {
			return fmt.Errorf("%d claims still in the server", n)
		}
		return nil
	})
	for _, job := range []string{"a", "b"} {
		if m := findMarker(t, s, job, at); m.Holder == "r2" {
			t.Errorf("%s won by r2 %v after its claim began, past its 1 s deadline: nobody runs it",
				job, m.ClaimedAt.Sub(t0).Round(time.Millisecond))
		}
	}
}
