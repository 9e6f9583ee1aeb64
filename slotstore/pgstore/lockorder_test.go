package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestClaimLookLocksNoMarker: a claim that waited for its batch's first
// fence row and then looks at the batch (version 6) holds no marker's
// lock when it goes on to take the other fence rows, so it cannot deadlock
// with a claim that holds one of those fence rows and waits for a marker.
//
// Claim B of [slow@s, tick@s], both running under expired leases, meets
// the slow fence row locked by A and waits for it; C then locks the tick
// fence row. A commits: B looks, finds takeovers to write, and waits for
// C's fence row. C then locks the tick@s marker, as a claim of [tick@s]
// does in its row-by-row step. Version 5 had B lock that marker while
// looking: the server found a deadlock after deadlock_timeout and aborted
// one of them.
func TestClaimLookLocksNoMarker(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	fences := pgx.Identifier{s.Schema(), "fences"}.Sanitize()
	markers := pgx.Identifier{s.Schema(), "markers"}.Sanitize()
	at := slot(0)
	reqs := func(lease time.Duration) []slotstore.ClaimRequest {
		return []slotstore.ClaimRequest{{Job: "slow", Slot: at, Lease: lease}, {Job: "tick", Slot: at, Lease: lease}}
	}
	first, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: reqs(50 * time.Millisecond)})
	if err != nil || first[0].Status != slotstore.Won || first[1].Status != slotstore.Won {
		t.Fatalf("first claim: %+v, %v", first, err)
	}
	time.Sleep(time.Until(first[1].Marker.LeaseEnd) + 20*time.Millisecond)

	begin := func(name string) (pgx.Tx, int) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		var pid int
		if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return tx, pid
	}
	lock := func(tx pgx.Tx, name, sql string, args ...any) {
		t.Helper()
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %v", name, tag, err)
		}
	}

	a, aPID := begin("A")
	lock(a, "A locks the slow fence row", "SELECT FROM "+fences+" WHERE job = 'slow' FOR UPDATE")

	type claimed struct {
		res []slotstore.ClaimResult
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: reqs(time.Minute)})
		done <- claimed{res, err}
	}()
	waitForBlockedBy(t, pool, aPID)

	c, cPID := begin("C")
	lock(c, "C locks the tick fence row", "SELECT FROM "+fences+" WHERE job = 'tick' FOR UPDATE")
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitForBlockedBy(t, pool, cPID) // B looked, and now takes the fence rows

	// C's lock on the marker waits for nothing now; bound it well past
	// deadlock_timeout in case it does.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err = c.Exec(cctx, "SELECT FROM "+markers+" WHERE job = 'tick' AND slot = $1 FOR UPDATE", at)
	if err != nil {
		t.Errorf("C's lock on the tick marker after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	} else if waited := time.Since(t0); waited > 500*time.Millisecond {
		t.Errorf("C waited %v for the tick marker: B held it", waited.Round(time.Millisecond))
	}
	select {
	case got := <-done:
		t.Fatalf("claim B ended while C held the tick fence row: %+v, %v", got.res, got.err)
	default:
	}
	if err := c.Commit(ctx); err != nil {
		t.Errorf("C commit: %v", err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("claim B: %v", got.err)
	}
	for i, r := range got.res {
		if r.Status != slotstore.Won || r.Claim.Attempt != 2 || r.Claim.PrevHolder != "r1" {
			t.Errorf("claim B of %s: %v %+v, want a takeover from r1", reqs(0)[i].Job, r.Status, r.Claim)
		}
	}
}

// waitForBlockedBy waits until a session of the database waits for a lock
// that the backend pid holds.
func waitForBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("a session to wait for a lock of backend %d", pid), func() error {
		var n int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND $1 = ANY (pg_blocking_pids(pid))`, pid).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return errors.New("nobody waits")
		}
		return nil
	})
}

// TestClaimLookAnswersHeldAsCommitted: a claim that looks answers a slot
// running under a live lease held as committed, without waiting for a
// mutation of the marker in progress (here a transaction holding its row
// lock): the claim takes effect before that mutation.
func TestClaimLookAnswersHeldAsCommitted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	first := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute})

	var txs [2]pgx.Tx
	var aPID int
	for i, sql := range []string{
		"SELECT FROM " + pgx.Identifier{s.Schema(), "fences"}.Sanitize() + " WHERE job = 'j' FOR UPDATE",
		"SELECT FROM " + pgx.Identifier{s.Schema(), "markers"}.Sanitize() + " WHERE job = 'j' FOR UPDATE",
	} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		if tag, err := tx.Exec(ctx, sql); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %v", sql, tag, err)
		}
		txs[i] = tx
	}
	if err := txs[0].QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&aPID); err != nil {
		t.Fatal(err)
	}
	type claimed struct {
		res []slotstore.ClaimResult
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{
			{Job: "j", Slot: slot(0), Lease: time.Minute},
		}})
		done <- claimed{res, err}
	}()
	waitForBlockedBy(t, pool, aPID)
	if err := txs[0].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got.err != nil {
			t.Fatalf("claim: %v", got.err)
		}
		if res := got.res[0]; res.Status != slotstore.Held || res.Marker.Holder != "r1" || res.Marker.Fence != first.Claim.Fence {
			t.Errorf("claim: %v %+v, want held by r1", res.Status, res.Marker)
		}
	case <-time.After(5 * time.Second):
		t.Error("the claim waited for the marker's lock")
		txs[1].Rollback(ctx)
		<-done
	}
}
