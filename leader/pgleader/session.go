package pgleader

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

// session is one campaign's dedicated connection. While the campaign
// leads, the connection's session holds the name's advisory lock; the
// lock ends with the connection, so a leader that dies leaves it to the
// server to drop.
type session struct {
	conn   *pgx.Conn
	sql    *statements
	name   string
	holder string
	key    int64
}

// Acquire implements driver.Session: it takes the name's advisory lock,
// then the name's row if its lease has ended.
func (s *session) Acquire(ctx context.Context, lease time.Duration) (driver.Attempt, error) {
	locked, err := s.tryLock(ctx)
	if err != nil {
		return driver.Attempt{}, err
	}
	if !locked {
		a, terminated, err := s.held(ctx, lease)
		if !terminated || err != nil {
			return a, err
		}
		if locked, err = s.awaitLock(ctx); !locked || err != nil {
			return driver.Attempt{}, err
		}
	}
	var fence int64
	err = s.conn.QueryRow(ctx, s.sql.claim, s.name, s.holder, lease.Microseconds()).Scan(&fence)
	if err == nil {
		return driver.Attempt{Won: true, Fence: fence}, nil
	}
	// Not won: drop the lock, which only a leader keeps.
	if _, uerr := s.conn.Exec(ctx, "SELECT pg_advisory_unlock_all()"); uerr != nil {
		return driver.Attempt{}, s.fail("acquire", uerr)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return driver.Attempt{}, s.fail("acquire", err)
	}
	// The last leader's session is gone, but its lease has time left: it
	// may act until its trust window ends, so wait for the lease.
	left, _, err := s.remaining(ctx)
	if err != nil {
		return driver.Attempt{}, err
	}
	return driver.Attempt{Remaining: max(left, 0)}, nil
}

// remaining returns how long the name's lease has left by the database's
// clock, and whether the name has a row.
func (s *session) remaining(ctx context.Context) (time.Duration, bool, error) {
	var us int64
	err := s.conn.QueryRow(ctx, s.sql.remaining, s.name).Scan(&us)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.fail("read the lease", err)
	}
	return time.Duration(us) * time.Microsecond, true, nil
}

// Renew implements driver.Session. The renewal is also the check of the
// connection: a connection that broke took the lock with it, and the term
// is lost.
func (s *session) Renew(ctx context.Context, fence int64, lease time.Duration) error {
	tag, err := s.conn.Exec(ctx, s.sql.renew, s.name, fence, s.holder, lease.Microseconds())
	if err != nil {
		if s.conn.IsClosed() {
			return fmt.Errorf("pgleader: renew %s fence %d: connection lost, and the lock with it: %w: %w", s.name, fence, leader.ErrLeaseLost, err)
		}
		return s.fail("renew", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("pgleader: renew %s fence %d: %w", s.name, fence, leader.ErrLeaseLost)
	}
	return nil
}

// Release implements driver.Session.
func (s *session) Release(ctx context.Context, fence int64) error {
	tag, err := s.conn.Exec(ctx, s.sql.release, s.name, fence, s.holder, channel, s.payload())
	if err == nil && tag.RowsAffected() == 0 {
		_, err = s.conn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
	}
	if err != nil {
		return s.fail("release", err)
	}
	return nil
}

// Wait implements driver.Session: it waits for a NOTIFY of this name's
// release, or for d.
func (s *session) Wait(ctx context.Context, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		n, err := s.conn.WaitForNotification(wctx)
		switch {
		case err == nil:
			if n.Channel == channel && n.Payload == s.payload() {
				return nil
			}
		case s.conn.IsClosed():
			return s.fail("wait", err)
		case ctx.Err() != nil:
			return ctx.Err()
		case wctx.Err() != nil:
			return nil // the lease's time is up
		default:
			return s.fail("wait", err)
		}
	}
}

// Close implements driver.Session. Closing the connection ends its session
// and any lock it held.
func (s *session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.conn.Close(ctx)
}

// payload names this session's name in notifications.
func (s *session) payload() string { return strconv.FormatInt(s.key, 10) }

func (s *session) fail(op string, err error) error {
	return fmt.Errorf("pgleader: %s %s: %w", op, s.name, err)
}
