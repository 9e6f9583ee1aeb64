// Package redis links the redis store kind into a binary: store.kind:
// redis keeps slots in Redis (package slotstore/redisstore), standalone,
// Sentinel or Cluster, and duties elect with package leader/redisleader.
// Import it for its side effect:
//
//	import _ "github.com/slotcron/slotcron/scheduler/redis"
//
// It registers the kind with package storekind. The store.redis block of
// the configuration is redisstore.Options; in Go, set Config.Store to
// StoreConfig{Kind: "redis", Options: redisstore.Options{...}}. A store
// made with redisstore.New on a client of yours, handed to the scheduler
// with WithStore, elects with the same elector.
package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/redisleader"
	"github.com/slotcron/slotcron/scheduler/storekind"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

func init() {
	storekind.Register("redis", storekind.Kind[redisstore.Options, *redisstore.Store]{
		Open:  redisstore.Open,
		Check: check,
		// Duties lease beside the store's keys, on its connections;
		// followers are woken by pub/sub.
		Elector: func(_ context.Context, st *redisstore.Store, log *slog.Logger) (leader.Elector, error) {
			return redisleader.New(st.Client(), redisleader.Options{Prefix: st.Prefix() + "leader:", Logger: log}), nil
		},
		// Redis answers LOADING while it reads its data set at start-up.
		Unreachable: func(err error) bool { return strings.Contains(err.Error(), "LOADING") },
		// go-redis has one logger per process; the last Run on a Redis
		// store sets it.
		RouteLogs: func(_ *redisstore.Store, log *slog.Logger) { goredis.SetLogger(clientLog{log}) },
	})
}

// check is Options.Validate, and says that a file which chose redis and
// names no server most likely left a ${VAR} unset: in Go the zero Options
// mean a local server.
func check(o redisstore.Options) error {
	err := o.Validate()
	if o.Addr == "" && len(o.Addrs) == 0 {
		err = errors.Join(optkey.Errorf("", "store.kind is redis but no redis addr or addrs is set (is its ${VAR} set?)"), err)
	}
	return err
}

// clientLog is a go-redis logger writing to slog.
type clientLog struct{ log *slog.Logger }

func (l clientLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", strings.TrimSpace(fmt.Sprintf(format, v...)))
}
