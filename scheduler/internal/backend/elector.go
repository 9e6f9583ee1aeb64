package backend

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
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
//
// A store of a kind slotcron ships with an elector of its own (Redis,
// Postgres, etcd) whose kind the binary does not link is an error naming
// the import: electing in the slot store instead would elect a second
// leader beside replicas that do link it.
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
	if err := CheckLinked(st); err != nil {
		return nil, "", err
	}
	return slotElector(st, log), "slot store", nil
}

// KindElector is Elector for a store opened as the configured kind: the
// elector of that kind, whatever other kinds claim the store's type.
func KindElector(ctx context.Context, kind string, st slotstore.Store, log *slog.Logger) (leader.Elector, string, error) {
	k, ok := Lookup(kind)
	if !ok || k.Elector == nil {
		return slotElector(st, log), "slot store", nil
	}
	el, ok, err := k.Elector(ctx, st, log)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", fmt.Errorf("store kind %q opened a %T, which its elector does not take", k.Name, st)
	}
	return el, k.Name, nil
}

// slotElector elects in the slot store itself: a lease slot followers poll
// every 100 ms.
func slotElector(st slotstore.Store, log *slog.Logger) leader.Elector {
	d := &slotDriver{store: st, poll: 100 * time.Millisecond}
	return driver.NewElector(d, driver.Options{Logger: log})
}

// electing maps the packages of the stores slotcron ships with an elector
// of their own to the package whose import links their kind.
var electing = map[string]string{
	"github.com/slotcron/slotcron/slotstore/redisstore": "github.com/slotcron/slotcron/scheduler/redis",
	"github.com/slotcron/slotcron/slotstore/pgstore":    "github.com/slotcron/slotcron/scheduler/postgres",
	"github.com/slotcron/slotcron/slotstore/etcdstore":  "github.com/slotcron/slotcron/scheduler/etcd",
}

// CheckLinked reports a store of a kind slotcron ships with an elector of
// its own that no registered kind takes: the error names the import that
// links it.
func CheckLinked(st slotstore.Store) error {
	t := reflect.TypeOf(st)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	imp, ok := electing[t.PkgPath()]
	if !ok {
		return nil
	}
	for _, k := range Kinds() {
		if k.Store != nil && reflect.TypeOf(st) == k.Store {
			return nil
		}
	}
	return fmt.Errorf("a %T elects duties with an elector of its own, whose store kind is not linked into this binary: import _ %q", st, imp)
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
