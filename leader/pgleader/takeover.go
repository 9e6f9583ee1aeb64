package pgleader

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/leader/driver"
)

// A follower whose Acquire finds the lock held looks at the row: while the
// lease has time left it waits; once the lease has ended, a session that
// still holds the lock is a stalled leader, and the follower ends it.

// held answers an Acquire whose lock another session holds: the lease's
// time left; or, when the recorded leader's lease has ended although its
// session still holds the lock, terminated is true: that session was told
// to end.
func (s *session) held(ctx context.Context, lease time.Duration) (a driver.Attempt, terminated bool, err error) {
	left, found, err := s.remaining(ctx)
	if err != nil {
		return driver.Attempt{}, false, err
	}
	if found && left > 0 {
		return driver.Attempt{Remaining: left}, false, nil
	}
	rows, err := s.conn.Query(ctx, s.sql.terminate, s.name, int64(uint64(s.key)>>32), int64(uint32(s.key)))
	if err != nil {
		return driver.Attempt{}, false, s.fail("terminate a stalled leader", err)
	}
	signalled, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return driver.Attempt{}, false, s.fail("terminate a stalled leader", err)
	}
	if len(signalled) > 0 {
		return driver.Attempt{}, true, nil
	}
	// Another follower holds the lock for an instant while it takes the
	// row (or its session stalled right then): look again shortly.
	return driver.Attempt{Remaining: lease / 20}, false, nil
}

// tryLock tries the name's advisory lock once.
func (s *session) tryLock(ctx context.Context) (bool, error) {
	var locked bool
	if err := s.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", s.key).Scan(&locked); err != nil {
		return false, s.fail("lock", err)
	}
	return locked, nil
}

// awaitLock tries the lock every millisecond for up to a second, while a
// terminated session exits and its lock is dropped. (pg_terminate_backend
// could wait for the exit itself, but it checks every 100 ms.)
func (s *session) awaitLock(ctx context.Context) (bool, error) {
	deadline := time.Now().Add(time.Second)
	for {
		locked, err := s.tryLock(ctx)
		if locked || err != nil || time.Now().After(deadline) {
			return locked, err
		}
		sleepCtx(ctx, time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
