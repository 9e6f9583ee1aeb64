package backend

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/leader/etcdleader"
	"github.com/slotcron/slotcron/leader/pgleader"
	"github.com/slotcron/slotcron/leader/redisleader"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// Elector returns the elector duties campaign with on st, the store in use,
// and the name of its kind for logs: on Redis, leases beside the store's
// keys on the store's own connections (followers woken by pub/sub); on
// Postgres, a session advisory lock on a dedicated connection, made with
// the settings the store's pool connects with, plus a lease row (woken by
// NOTIFY); on etcd, a term key beside the store's keys on the store's own
// client, its fence the revision that created it (woken by a watch); on
// any other store (SQLite, memory, a store of the caller's), a
// lease slot in the slot store itself, which followers poll every 100 ms.
// log should not carry the replica: the elector's lines name it.
func Elector(ctx context.Context, st slotstore.Store, log *slog.Logger) (leader.Elector, string, error) {
	switch st := st.(type) {
	case *redisstore.Store:
		return redisleader.New(st.Client(), redisleader.Options{Prefix: st.Prefix() + "leader:", Logger: log}), "redis", nil
	case *pgstore.Store:
		el, err := pgleader.New(ctx, pgleader.Options{ConnConfig: st.Pool().Config().ConnConfig, Schema: st.Schema(), Logger: log})
		if err != nil {
			return nil, "", fmt.Errorf("duties: %w", err)
		}
		return el, "postgres", nil
	case *etcdstore.Store:
		el, err := etcdleader.New(st.Client(), etcdleader.Options{Prefix: st.Prefix(), Clock: st.Now, FenceBase: st.FenceBase(),
			CheckBase: st.ClusterBase, Logger: log})
		if err != nil {
			return nil, "", fmt.Errorf("duties: %w", err)
		}
		return el, "etcd", nil
	}
	d := &slotDriver{store: st, poll: 100 * time.Millisecond}
	return driver.NewElector(d, driver.Options{Logger: log}), "slot store", nil
}
