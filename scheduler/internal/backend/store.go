// Package backend builds what the engine runs on from the configuration:
// the slot store of the configured kind, and the elector the duties
// campaign with, which follows the store in use. It is the one place that
// maps store.kind to a backend.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// Config is the store block of the configuration, checked.
type Config struct {
	// Kind is sqlite (the default, when empty), memory, redis, postgres or
	// etcd.
	Kind     string
	SQLite   sqlitestore.Options
	Redis    redisstore.Options
	Postgres pgstore.Options
	Etcd     etcdstore.Options
}

// KindName is the kind's name as logs show it.
func KindName(kind string) string {
	if kind == "" {
		return "sqlite"
	}
	return kind
}

// Open opens the store c describes.
func Open(ctx context.Context, c Config) (slotstore.Store, error) {
	switch c.Kind {
	case "memory":
		return memstore.New(memstore.Options{}), nil
	case "", "sqlite":
		s, err := sqlitestore.Open(ctx, c.SQLite)
		if err != nil {
			path := c.SQLite.Path
			if path == "" {
				path = sqlitestore.DefaultPath
			}
			return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
		}
		return s, nil
	case "redis":
		s, err := redisstore.Open(ctx, c.Redis)
		if err != nil {
			return nil, fmt.Errorf("open redis store: %w", err) // redisstore never shows the password
		}
		return s, nil
	case "postgres":
		s, err := pgstore.Open(ctx, c.Postgres)
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err) // pgstore redacts the DSN
		}
		return s, nil
	case "etcd":
		s, err := etcdstore.Open(ctx, c.Etcd)
		if err != nil {
			return nil, fmt.Errorf("open etcd store: %w", err) // etcdstore never shows the password
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown store kind %q", c.Kind)
}

// OpenWait opens the store c describes, retrying for up to wait with a
// backoff from 250 ms to 5 s while the store cannot be reached, and logging
// each failure. Any other error (a bad option, a refused login, a missing
// directory) is returned at once: waiting would not mend it.
func OpenWait(ctx context.Context, c Config, wait time.Duration, log *slog.Logger) (slotstore.Store, error) {
	octx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pause := 250 * time.Millisecond
	for try := 1; ; try++ {
		st, err := Open(octx, c)
		if err == nil || !Unreachable(err) || octx.Err() != nil {
			if err != nil && ctx.Err() == nil && octx.Err() != nil {
				err = fmt.Errorf("%w (gave up after %v)", err, wait)
			}
			return st, err
		}
		log.Warn("opening the store failed; retrying", "err", err, "try", try, "in", pause)
		select {
		case <-octx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// Unreachable reports whether err says the store could not be reached, or
// was not ready to serve: a refused or broken connection, a timeout, a
// server starting up or shutting down.
func Unreachable(err error) bool {
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Code == "57P03" || pgErr.Code == "57P01" // cannot connect now; admin shutdown
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	// Redis answers LOADING while it reads its data set at start-up.
	return strings.Contains(err.Error(), "LOADING")
}
