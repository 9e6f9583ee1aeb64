package backend

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// RouteClientLogs sends what the store's client library logs on its own
// through log, so that it is formatted, levelled and filtered like every
// other line: go-redis writes its lines (a pool's failed dial, a Sentinel
// switch) to the process's standard error otherwise. go-redis has one
// logger per process; the last Run on a Redis store sets it.
func RouteClientLogs(st slotstore.Store, log *slog.Logger) {
	if _, ok := st.(*redisstore.Store); ok {
		redis.SetLogger(redisLog{log})
	}
}

// redisLog is a go-redis logger writing to slog.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", strings.TrimSpace(fmt.Sprintf(format, v...)))
}
