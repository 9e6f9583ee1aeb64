package scheduler

import (
	"context"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
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
	}
	return nil, fmt.Errorf("unknown store kind %q", cfg.Kind)
}
