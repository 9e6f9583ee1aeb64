package pglock_test

import (
	"errors"
	"testing"

	"github.com/slotcron/slotcron/slotstore/pgstore/pglock"
)

// TestPooledSessionLockLeaks demonstrates the hazard this package exists
// for: a session-level advisory lock taken on a pooled connection outlives
// the code that took it, and the next borrower of that connection silently
// holds it too.
func TestPooledSessionLockLeaks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = 7001
	pool := newPool(t, e.dsn, 1)
	ctx := t.Context()

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID()
	conn.Release() // back to the pool, still holding the lock

	if pids := e.wantHeld(t, "after the connection went back to the pool", key, 1); pids[0] != int32(pid) {
		t.Errorf("held by pid %d, want the pooled connection's %d", pids[0], pid)
	}
	// Another borrower of the pool gets the same session, and with it the
	// lock, without asking for it.
	var again bool
	if err := pool.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&again); err != nil || !again {
		t.Errorf("another borrower's try-lock: %v, %v; want true: the session already holds it", again, err)
	}
	// Everyone else is locked out.
	if l, err := pglock.TryLockSession(ctx, connConfig(t, e.dsn), key, pglock.SessionOptions{}); !errors.Is(err, pglock.ErrLocked) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Errorf("dedicated session's try-lock: %v, want ErrLocked", err)
	}
	pool.Close()
	eventually(t, "lock released when the pool closed its connection", func() bool {
		pids, _ := e.holders(t, key)
		return len(pids) == 0
	})
}
