package pglock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// DefaultPingEvery is how often a SessionLock pings its connection
	// when SessionOptions.PingEvery is zero.
	DefaultPingEvery = time.Second
	// DefaultPingTimeout bounds one ping when SessionOptions.PingTimeout is
	// zero.
	DefaultPingTimeout = 2 * time.Second
)

// ErrLocked reports that TryLockSession found the lock held by another
// session.
var ErrLocked = errors.New("pglock: lock held by another session")

// SessionOptions configures LockSession and TryLockSession. Zero values
// mean the defaults.
type SessionOptions struct {
	// PingEvery is the interval between pings of the lock's connection.
	// Zero means DefaultPingEvery.
	PingEvery time.Duration
	// PingTimeout bounds each ping; a ping that takes longer counts as
	// failed. Zero means DefaultPingTimeout.
	PingTimeout time.Duration
}

// SessionLock is a session-level advisory lock held on a dedicated
// connection. It is safe for concurrent use.
type SessionLock struct {
	key  int64
	opts SessionOptions

	mu   sync.Mutex // serialises use of conn
	conn *pgx.Conn  // nil once closed

	lost     chan struct{} // closed when a ping fails
	stop     chan struct{} // closed by Unlock
	done     chan struct{} // closed when the pinger has returned
	lostOnce sync.Once
	stopOnce sync.Once
}

// LockSession connects with cfg on a connection of its own and waits until
// it holds the session-level advisory lock key, or ctx ends. cfg must come
// from pgx.ParseConfig; a pool's Config().ConnConfig will do. The caller
// must call Unlock, also after Lost fires, to stop the pinger.
func LockSession(ctx context.Context, cfg *pgx.ConnConfig, key int64, opts SessionOptions) (*SessionLock, error) {
	return lockSession(ctx, cfg, key, opts, "SELECT true FROM pg_advisory_lock($1)")
}

// TryLockSession is LockSession without the wait: it returns an error
// wrapping ErrLocked when another session holds the lock.
func TryLockSession(ctx context.Context, cfg *pgx.ConnConfig, key int64, opts SessionOptions) (*SessionLock, error) {
	return lockSession(ctx, cfg, key, opts, "SELECT pg_try_advisory_lock($1)")
}

func lockSession(ctx context.Context, cfg *pgx.ConnConfig, key int64, opts SessionOptions, sql string) (*SessionLock, error) {
	if opts.PingEvery <= 0 {
		opts.PingEvery = DefaultPingEvery
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = DefaultPingTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pglock: session lock %d: connect: %w", key, err)
	}
	var got bool
	if err := conn.QueryRow(ctx, sql, key).Scan(&got); err != nil {
		// Closing the session drops the lock if the server granted it.
		conn.Close(context.Background())
		return nil, fmt.Errorf("pglock: session lock %d: %w", key, err)
	}
	if !got {
		conn.Close(context.Background())
		return nil, fmt.Errorf("pglock: session lock %d: %w", key, ErrLocked)
	}
	l := &SessionLock{
		key: key, opts: opts, conn: conn,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.watch()
	return l, nil
}

// Key returns the lock's key.
func (l *SessionLock) Key() int64 { return l.key }

// Lost returns a channel that is closed when a ping of the lock's
// connection has failed: the lock may be held by someone else by now.
// Unlock does not close it.
func (l *SessionLock) Lost() <-chan struct{} { return l.lost }

// watch pings the connection until Unlock or a failed ping.
func (l *SessionLock) watch() {
	defer close(l.done)
	tick := time.NewTicker(l.opts.PingEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		if err := l.ping(); err != nil {
			l.lostOnce.Do(func() { close(l.lost) })
			l.closeConn()
			return
		}
	}
}

func (l *SessionLock) ping() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return errors.New("pglock: connection closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.PingTimeout)
	defer cancel()
	return l.conn.Ping(ctx)
}

func (l *SessionLock) closeConn() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
}

// Unlock releases the lock, closes its connection and stops the pinger.
// After a lost connection it only cleans up, and returns nil: the server
// dropped the lock with the session. It is safe to call more than once.
func (l *SessionLock) Unlock(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	conn := l.conn
	l.conn = nil
	_, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key)
	// Closing the session releases the lock even if the unlock failed.
	if cerr := conn.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pglock: unlock %d: %w", l.key, err)
	}
	return nil
}
