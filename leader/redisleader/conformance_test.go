package redisleader_test

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/leadertest"
	"github.com/slotcron/slotcron/leader/redisleader"
)

func TestConformance(t *testing.T) {
	srv := testserver.StartRedis(t)
	leadertest.Run(t, harness(func(t *testing.T) string { return srv.Addr() }))
}

// harness builds electors on the server whose address addr returns, each
// with a client of its own; a stallable one reaches it through a proxy.
func harness(addr func(t *testing.T) string) leadertest.Harness {
	return leadertest.Harness{
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return redisleader.New(client(t, addr(t)), redisleader.Options{Logger: log})
		},
		NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) {
			p := testserver.StartProxy(t, addr(t))
			return redisleader.New(client(t, p.Addr()), redisleader.Options{Logger: log}), p.Blackhole
		},
	}
}

// On a Cluster the lease and the fence counter share a hash slot, and the
// release message reaches followers subscribed through any node.
func TestConformanceCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	newClient := func(t *testing.T) *redis.ClusterClient {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DisableIdentity: true, ContextTimeoutEnabled: true})
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	leadertest.Run(t, leadertest.Harness{
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return redisleader.New(newClient(t), redisleader.Options{Logger: log})
		},
		NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) {
			// A Cluster client learns the nodes' own addresses, so a proxy
			// cannot stand between it and them: stall with a client whose
			// every command hangs instead.
			cc := newClient(t)
			stalled := make(chan struct{})
			cc.AddHook(stallHook{stalled})
			return redisleader.New(cc, redisleader.Options{Logger: log}), sync.OnceFunc(func() { close(stalled) })
		},
	})
}

// stallHook makes every command of its client hang until its context ends
// once stalled is closed.
type stallHook struct{ stalled chan struct{} }

func (h stallHook) gate(ctx context.Context) error {
	select {
	case <-h.stalled:
		<-ctx.Done()
		return ctx.Err()
	default:
		return nil
	}
}

func (h stallHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := h.gate(ctx); err != nil {
			return nil, err
		}
		return next(ctx, network, addr)
	}
}

func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.gate(ctx); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.gate(ctx); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}
