package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// A holder whose connection to Redis is cut mid-run cancels its job when its
// trust window ends, before another replica takes the slot over with a
// higher fence. Real Redis, real time, a TCP proxy that drops the holder.
func TestRedisCutHolderStopsBeforeTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	t.Parallel()
	srv := testserver.StartRedis(t)
	proxy := testserver.StartProxy(t, srv.Addr())
	ctx := context.Background()
	open := func(addr string) slotstore.Store {
		st, err := redisstore.Open(ctx, redisstore.Options{Addrs: []string{addr}, ReadTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	viaProxy, direct := open(proxy.Addr()), open(srv.Addr())

	rec := &recorder{sleep: 30 * time.Second}
	reg := jobs.NewRegistry()
	reg.Register("long", rec.fn)
	conf := fmt.Sprintf("shutdown_grace: 1s\njobs: {long: {schedule: %q, lease: 2s}}", soon(4*time.Second))
	stopA := start(t, replica(t, viaProxy, "a", conf, reg))
	defer stopA()
	poll.Until(t, 10*time.Second, "running the slot on a", func() error { return runsAtLeast(1, len(rec.snapshot())) })
	metricsB := prometheus.NewRegistry()
	stopB := start(t, replica(t, direct, "b", conf, reg, WithRegistry(metricsB)))
	defer stopB()
	// b has found the slot held: it watches it from now on.
	poll.Until(t, 10*time.Second, "watching the slot on b", func() error {
		if counter(t, metricsB, "slotcron_claims_total", "job_name", "long", "result", "held") == 0 {
			return errors.New("no claim of b found the slot held")
		}
		return nil
	})
	proxy.Blackhole()
	defer proxy.Restore()
	cut := time.Now()
	poll.Until(t, 30*time.Second, "taking the slot over on b", func() error { return runsAtLeast(2, len(rec.snapshot())) })
	evs := rec.snapshot()
	stopB()
	proxy.Restore()
	stopA()

	if len(evs) != 2 {
		t.Fatalf("%d runs, want the holder's and the takeover", len(evs))
	}
	a, b := evs[0], evs[1]
	if !errors.Is(a.cause, engine.ErrLeaseLost) || a.ended.IsZero() || !a.ended.Before(b.started) {
		t.Errorf("holder ended %v with %v; successor started %v", a.ended, a.cause, b.started)
	}
	if b.run.Replica != "b" || b.run.Attempt != 2 || b.run.Fence <= a.run.Fence {
		t.Errorf("takeover %+v after %+v", b.run, a.run)
	}
	t.Logf("cut → holder cancelled %v, takeover %v (lease 2s)", a.ended.Sub(cut).Round(time.Millisecond), b.started.Sub(cut).Round(time.Millisecond))
}
