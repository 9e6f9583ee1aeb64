package pglock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore/pgstore/pglock"
)

// TestSessionLock: the dedicated connection's lock keeps others out until
// Unlock, leaves nothing behind, and a blocked LockSession gets it next.
func TestSessionLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = 7003
	ctx := t.Context()
	cfg := connConfig(t, e.dsn)
	pool := newPool(t, e.dsn, 1)

	l, err := pglock.TryLockSession(ctx, cfg, key, pglock.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.wantHeld(t, "session lock", key, 1)
	if _, err := pglock.TryLockSession(ctx, cfg, key, pglock.SessionOptions{}); !errors.Is(err, pglock.ErrLocked) {
		t.Errorf("second try-lock: %v, want ErrLocked", err)
	}
	if ran, err := pglock.RunExclusive(ctx, pool, key, func(context.Context, pgx.Tx) error { return nil }); ran || err != nil {
		t.Errorf("RunExclusive under a session lock: ran %v, %v", ran, err)
	}

	type locked struct {
		l   *pglock.SessionLock
		err error
	}
	next := make(chan locked, 1)
	go func() {
		l, err := pglock.LockSession(ctx, cfg, key, pglock.SessionOptions{})
		next <- locked{l, err}
	}()
	eventually(t, "second LockSession waiting", func() bool {
		_, waiting := e.holders(t, key)
		return waiting == 1
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	got := <-next
	if got.err != nil {
		t.Fatalf("LockSession after unlock: %v", got.err)
	}
	e.wantHeld(t, "after handing over", key, 1)
	if err := got.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	e.wantHeld(t, "after both unlocked", key, 0)
	select {
	case <-l.Lost():
		t.Error("Lost closed by Unlock")
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("second unlock: %v", err)
	}
}

// TestSessionLockLost: when the lock's backend is terminated, the server
// drops the lock and Lost fires.
func TestSessionLockLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = 7004
	ctx := t.Context()
	l, err := pglock.TryLockSession(ctx, connConfig(t, e.dsn), key, pglock.SessionOptions{PingEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	pid := e.wantHeld(t, "session lock", key, 1)[0]
	var ok bool
	if err := e.observer.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate backend %d: %v, %v", pid, ok, err)
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not fire within 5s of the backend's termination")
	}
	eventually(t, "lock gone with the terminated session", func() bool {
		pids, _ := e.holders(t, key)
		return len(pids) == 0
	})
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("unlock after loss: %v", err)
	}
	l2, err := pglock.TryLockSession(ctx, connConfig(t, e.dsn), key, pglock.SessionOptions{})
	if err != nil {
		t.Fatalf("lock after the loss: %v", err)
	}
	l2.Unlock(ctx)
}
