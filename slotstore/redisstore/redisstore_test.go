package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial and Sentinel lookup; the tests cause
	// plenty on purpose.
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// prefixes makes every store of a test process a keyspace of its own, so
// stores sharing a server share no markers or fences.
var prefixes atomic.Int64

// open returns a store on the servers at addrs under a fresh prefix, closed
// when t ends.
func open(t testing.TB, addrs ...string) *redisstore.Store {
	t.Helper()
	return openWith(t, redisstore.Options{Addrs: addrs})
}

func openWith(t testing.TB, o redisstore.Options) *redisstore.Store {
	t.Helper()
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("test%d:", prefixes.Add(1))
	}
	s, err := redisstore.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("open store on %v: %v", o.Addrs, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	r := testserver.StartRedis(t)
	storetest.Run(t, func(t *testing.T) slotstore.Store { return open(t, r.Addr()) })
}

func TestConformanceCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	storetest.Run(t, func(t *testing.T) slotstore.Store { return open(t, c.Addrs()...) })
}
