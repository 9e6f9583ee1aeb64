package scheduler

import (
	"context"
	"fmt"

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
