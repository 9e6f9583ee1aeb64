package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestRenewBehindCompleteTx: the engine's renewal of a run whose job has
// completed the slot in its own, still open, transaction waits for that
// transaction, then reports the slot finished under its fence if it
// committed (not a lost lease), and renews the lease if it rolled back.
func TestRenewBehindCompleteTx(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newStore(t)
			pool := newPool(t, testserver.SharedPostgres(t).DSN())
			won := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute})

			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if err := pgstore.CompleteTx(ctx, tx, runOf(s, won), pgstore.CompleteParams{}); err != nil {
				t.Fatalf("CompleteTx: %v", err)
			}
			renewed := make(chan error, 1)
			go func() { renewed <- s.Renew(ctx, slotstore.RenewParams{Ref: won.Claim.Ref, Lease: time.Hour}) }()
			waitForLockWaitIn(t, pool, s.Schema(), "renew")
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = <-renewed
			m := findMarker(t, s, "j", slot(0))
			switch {
			case commit && !errors.Is(err, slotstore.ErrFinished):
				t.Errorf("renewal behind a CompleteTx that committed: %v, want ErrFinished", err)
			case commit && m.State != slotstore.StateDone:
				t.Errorf("marker after the commit: %+v", m)
			case !commit && err != nil:
				t.Errorf("renewal behind a CompleteTx that rolled back: %v, want nil", err)
			case !commit && (m.State != slotstore.StateRunning || time.Until(m.LeaseEnd) < 30*time.Minute):
				t.Errorf("marker after the rollback and the renewal: %+v, want running for about an hour", m)
			}
		})
	}
}

// TestCompleteTxBoundsTransaction: CompleteTx sets the transaction's idle
// and statement timeouts to what remains of the lease by the database's
// clock, keeps a tighter timeout of the session's own, never goes below its
// floor, and leaves the session's settings as they were once the
// transaction ends.
func TestCompleteTxBoundsTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	settings := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (idle, stmt int64) {
		t.Helper()
		err := q.QueryRow(ctx, `SELECT
			(SELECT setting::bigint FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'),
			(SELECT setting::bigint FROM pg_settings WHERE name = 'statement_timeout')`).Scan(&idle, &stmt)
		if err != nil {
			t.Fatal(err)
		}
		return idle, stmt
	}
	idle0, stmt0 := settings(conn)

	won := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute})
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '5s'"); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.CompleteTx(ctx, tx, runOf(s, won), pgstore.CompleteParams{}); err != nil {
		t.Fatalf("CompleteTx: %v", err)
	}
	if idle, stmt := settings(tx); idle < 50_000 || idle > 60_000 || stmt != 5_000 {
		t.Errorf("after CompleteTx with a minute's lease and a 5s statement timeout: idle %dms, statement %dms; "+
			"want about 60000 and 5000", idle, stmt)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if idle, stmt := settings(conn); idle != idle0 || stmt != stmt0 {
		t.Errorf("after the commit: idle %dms, statement %dms; want the session's %d and %d", idle, stmt, idle0, stmt0)
	}

	// A lease that has already ended (and that nobody took over) leaves
	// the floor.
	won = claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(1), Lease: time.Millisecond})
	time.Sleep(10 * time.Millisecond)
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := pgstore.CompleteTx(ctx, tx, runOf(s, won), pgstore.CompleteParams{}); err != nil {
		t.Fatalf("CompleteTx after the lease ended: %v", err)
	}
	if idle, stmt := settings(tx); idle != 250 || stmt != 250 {
		t.Errorf("after CompleteTx past the lease: idle %dms, statement %dms; want the floor, 250", idle, stmt)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCompleteTxFrozenHolder: a holder frozen after CompleteTx and before
// COMMIT (as under SIGSTOP: its connection simply stops sending) keeps the
// marker locked only until its lease ends. The server then ends its
// session and rolls its transaction back, effect and all, and a successor
// takes the slot over within a lease and a renewal interval of the
// holder's last renewal, although the freeze would last 30 seconds. A
// renewal the holder sent just before it froze, which waited behind its
// own transaction, extends the lease by a lease from when it was sent, no
// more.
func TestCompleteTxFrozenHolder(t *testing.T) {
	const (
		lease  = 2 * time.Second
		freeze = 30 * time.Second
	)
	ctx := t.Context()
	dsn := testserver.SharedPostgres(t).DSN()
	s := newStore(t, func(o *pgstore.Options) { o.StatementTimeout = freeze + 10*time.Second })
	pool := newPool(t, dsn)
	table := effects(t, pool, s)
	r := slotstore.ClaimRequest{Job: "frozen", Slot: slot(0), Lease: lease}
	won := claimOne(t, s, "holder", r)

	// The engine renews every lease/3.
	time.Sleep(lease / 3)
	renewedAt := time.Now()
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: won.Claim.Ref, Lease: lease}); err != nil {
		t.Fatalf("renew: %v", err)
	}

	// The job's transaction, on a connection of its own.
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run := runOf(s, won)
	if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, $2)", run.Key(), run.Fence); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{}); err != nil {
		t.Fatalf("CompleteTx: %v", err)
	}
	// The next renewal leaves before the freeze and waits behind the
	// transaction in the server.
	renewal := make(chan error, 1)
	go func() { renewal <- s.Renew(ctx, slotstore.RenewParams{Ref: won.Claim.Ref, Lease: lease}) }()
	waitForLockWaitIn(t, pool, s.Schema(), "renew")

	// Frozen: the holder sends nothing for the next 30 seconds. A successor
	// claims the slot as the engine does, again after each answer's
	// remaining lease; a claim that meets the locked marker waits for it.
	var took time.Duration
	for {
		res := claimOne(t, s, "successor", r)
		if res.Status == slotstore.Won {
			took = time.Since(renewedAt)
			if res.Claim.Attempt != 2 || res.Claim.PrevHolder != "holder" {
				t.Errorf("takeover: %+v", res.Claim)
			}
			break
		}
		if res.Status != slotstore.Held {
			t.Fatalf("claim during the freeze: %v (marker %+v)", res.Status, res.Marker)
		}
		if time.Since(renewedAt) > freeze {
			t.Fatalf("no takeover within the %v freeze", freeze)
		}
		time.Sleep(res.Remaining + 5*time.Millisecond)
	}
	t.Logf("takeover %v after the frozen holder's last renewal (lease %v, renewal interval %v, freeze %v)",
		took.Round(time.Millisecond), lease, lease/3, freeze)
	if bound := lease + lease/3 + time.Second; took > bound {
		t.Errorf("takeover %v after the holder's last renewal; want within %v", took, bound)
	}
	select {
	case err := <-renewal:
		// The holder's session had ended and its transaction rolled
		// back: the slot ran under its fence again, and the renewal in
		// flight renewed it.
		if err != nil {
			t.Errorf("the renewal in flight at the freeze: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the renewal in flight at the freeze has not returned")
	}

	// The holder wakes up: its transaction is gone, effect and all.
	if err := tx.Commit(ctx); err == nil {
		t.Error("the frozen holder's transaction committed after the takeover")
	}
	if f := effectFence(t, pool, table, run); f != 0 {
		t.Errorf("the frozen holder's effect committed (fence %d)", f)
	}
	if m := findMarker(t, s, r.Job, r.Slot); m.State != slotstore.StateRunning || m.Holder != "successor" || m.Attempt != 2 {
		t.Errorf("marker after the takeover: %+v", m)
	}
}
