package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.ScheduleWatcher = (*Store)(nil)

// The watch's timing: how long it waits for a notice before it pings its
// connection (a cut the network never reported), how long a ping may
// take, and the bounds of its wait before it connects again.
const (
	watchIdle     = 30 * time.Second
	watchPing     = 5 * time.Second
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// channelOf is the channel of the schedule writes of the schema quoted q
// (NOTIFY and LISTEN): a fixed prefix and a hash of the name, since a
// channel's name, as a schema's, holds at most 63 bytes.
func channelOf(q string) string {
	sum := sha256.Sum256([]byte(q))
	return "slotcron_schedules_" + hex.EncodeToString(sum[:8])
}

// WatchSchedules implements slotstore.ScheduleWatcher with LISTEN/NOTIFY:
// the write_schedules function notifies the schema's channel when a batch
// changed a schedule, delivered when it commits. The watch listens on a
// connection of its own, made as the pool makes its connections (its
// config and connect hooks) but never taken from the pool nor given back,
// and closed when ctx ends or the store is closed, when the channel is
// closed too. A cut connection is made again, after a wait that grows to
// watchRetryMax, and the watch then sends a notice, for writes may have
// come meanwhile; a connection that hears nothing for watchIdle is pinged.
func (s *Store) WatchSchedules(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.stop: // nil, never closed, for a store not made by open
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		defer close(out)
		defer cancel()
		if !s.closed.Load() {
			s.watch(ctx, out)
		}
	}()
	return out
}

// watch listens until ctx ends, connecting again after each cut.
func (s *Store) watch(ctx context.Context, out chan<- struct{}) {
	var retry time.Duration
	for connected := false; ; {
		if conn, err := s.listen(ctx); err == nil {
			if connected {
				notice(out) // a notice may have been lost while cut
			}
			connected, retry = true, 0
			s.hear(ctx, conn, out)
			closeCtx, cancel := context.WithTimeout(context.Background(), watchPing)
			conn.Close(closeCtx)
			cancel()
		}
		retry = min(max(2*retry, watchRetryMin), watchRetryMax)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// listen connects as the pool does and listens on the schema's channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := s.pool.Config()
	if cfg.BeforeConnect != nil {
		if err := cfg.BeforeConnect(ctx, cfg.ConnConfig); err != nil {
			return nil, err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, err
	}
	if cfg.AfterConnect != nil {
		err = cfg.AfterConnect(ctx, conn)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+quote(s.q.channel))
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// hear passes on the notices conn receives until ctx ends or conn fails.
func (s *Store) hear(ctx context.Context, conn *pgx.Conn, out chan<- struct{}) {
	for {
		wait, cancel := context.WithTimeout(ctx, watchIdle)
		_, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			notice(out)
			continue
		case ctx.Err() != nil, !errors.Is(err, context.DeadlineExceeded), conn.IsClosed():
			return
		}
		ping, cancel := context.WithTimeout(ctx, watchPing)
		err = conn.Ping(ping)
		cancel()
		if err != nil {
			return
		}
	}
}

// notice sends one notice unless one is waiting already: notices coalesce.
func notice(out chan<- struct{}) {
	select {
	case out <- struct{}{}:
	default:
	}
}
