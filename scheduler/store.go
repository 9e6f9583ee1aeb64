package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// openStore is the one place that maps store.kind to a backend.
func openStore(ctx context.Context, cfg StoreConfig) (slotstore.Store, error) {
	switch cfg.Kind {
	case "memory":
		return memstore.New(), nil
	case "", "sqlite":
		path := cfg.SQLite.Path
		if path == "" {
			path = DefaultSQLitePath
		}
		s, err := sqlitestore.Open(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
		}
		return s, nil
	case "redis":
		r := cfg.Redis
		s, err := redisstore.New(ctx, redisstore.Options{
			Addrs: r.addrs(), MasterName: r.MasterName, Username: r.Username, Password: r.Password, DB: r.DB,
			TLS: redisstore.TLSOptions{
				Enabled: r.TLS.Enabled, CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile,
				ServerName: r.TLS.ServerName, InsecureSkipVerify: r.TLS.InsecureSkipVerify,
			},
			Prefix: r.Prefix, DialTimeout: r.DialTimeout.D(), ReadTimeout: r.ReadTimeout.D(),
			WriteTimeout: r.WriteTimeout.D(), PoolSize: r.PoolSize,
			WaitReplicas: r.WaitReplicas, WaitTimeout: r.WaitTimeout.D(),
		})
		if err != nil {
			return nil, fmt.Errorf("open redis store: %w", err) // redisstore never shows the password
		}
		return s, nil
	case "postgres":
		p := cfg.Postgres
		s, err := pgstore.New(ctx, pgstore.Options{
			DSN: p.DSN, Schema: p.Schema, PoolSize: p.PoolSize, StatementTimeout: p.StatementTimeout.D(),
		})
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err) // pgstore redacts the DSN
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown store kind %q", cfg.Kind)
}

// StoreWait is how long Run retries opening a store it cannot reach at
// start-up before it gives up.
const StoreWait = time.Minute

// openStore opens the configured store, retrying for up to StoreWait with
// a backoff from 250 ms to 5 s while the store cannot be reached, and
// logging each failure. Any other error (a bad option, a refused login, a
// missing directory) is returned at once: waiting would not mend it.
func (s *Scheduler) openStore(ctx context.Context) (slotstore.Store, error) {
	octx, cancel := context.WithTimeout(ctx, StoreWait)
	defer cancel()
	wait := 250 * time.Millisecond
	for try := 1; ; try++ {
		st, err := openStore(octx, s.cfg.Store)
		if err == nil || !unreachable(err) || octx.Err() != nil {
			if err != nil && ctx.Err() == nil && octx.Err() != nil {
				err = fmt.Errorf("%w (gave up after %v)", err, StoreWait)
			}
			return st, err
		}
		s.log.Warn("opening the store failed; retrying", "replica", s.replica, "err", err, "try", try, "in", wait)
		select {
		case <-octx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// unreachable reports whether err says the store could not be reached, or
// was not ready to serve: a refused or broken connection, a timeout, a
// server starting up or shutting down.
func unreachable(err error) bool {
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
