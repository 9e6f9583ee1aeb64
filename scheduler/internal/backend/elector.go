package backend

import (
	"context"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/slotstore"
)

// Elector returns the elector duties campaign with on st, the store in use,
// and the name of its kind for logs: the elector of st's registered kind,
// whichever way st was made (on Redis, leases beside the store's keys on
// its own connections; on Postgres, a session advisory lock made with the
// settings the store's pool connects with; on etcd, a term key beside the
// store's keys, its fence a revision: each registration package says
// more), or, for a kind without one (SQLite, memory, a store of the
// caller's), a lease slot in the slot store itself, which followers poll
// every 100 ms. log should not carry the replica: the elector's lines name
// it.
func Elector(ctx context.Context, st slotstore.Store, log *slog.Logger) (leader.Elector, string, error) {
	for _, k := range Kinds() {
		if k.Elector == nil {
			continue
		}
		el, ok, err := k.Elector(ctx, st, log)
		if err != nil {
			return nil, "", err
		}
		if ok {
			return el, k.Name, nil
		}
	}
	d := &slotDriver{store: st, poll: 100 * time.Millisecond}
	return driver.NewElector(d, driver.Options{Logger: log}), "slot store", nil
}

// RouteClientLogs sends what the client library of st's kind logs on its
// own through log, so that it is formatted, levelled and filtered like
// every other line (go-redis, say, writes to the process's standard error
// otherwise).
func RouteClientLogs(st slotstore.Store, log *slog.Logger) {
	for _, k := range Kinds() {
		if k.RouteLogs != nil {
			k.RouteLogs(st, log)
		}
	}
}
