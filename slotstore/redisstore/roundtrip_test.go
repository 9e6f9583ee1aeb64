package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// roundTrips counts the requests a client sends: each command sent on its
// own and each pipeline is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestRoundTrips: on a single server, every operation is one round trip
// carrying one script call per 1,000 slots, counted by the server (INFO
// commandstats, which also counts the commands the scripts run inside) and
// by the client (a hook on its requests).
func TestRoundTrips(t *testing.T) {
	r := testserver.StartRedis(t)
	client := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	hook := &roundTrips{}
	client.AddHook(hook)
	s, err := redisstore.New(client, redisstore.Options{Prefix: "rt:"})
	if err != nil {
		t.Fatal(err)
	}
	stats := newCommandStats(t, r.Addr())
	ctx := t.Context()

	// New loads no scripts: the first call of each answers
	// NOSCRIPT, and the script goes again by its text, which caches it.
	first := stats.count(func() { won(t, claim(t, s, "r1", batch("warm", 0, 2, time.Minute)...)) })
	if first["evalsha"] != 1 || first["eval"] != 1 {
		t.Errorf("first claim on a server without the script: %v, want one EVALSHA and one EVAL", first)
	}
	warm(t, s, "warm")

	var one, thousand, many []slotstore.ClaimResult
	ops := []struct {
		name  string
		op    func()
		calls int // script calls, all EVALSHA
	}{
		{"claim of 1 slot", func() { one = claim(t, s, "r1", batch("rt", 0, 1, time.Minute)...) }, 1},
		{"claim of 1,000 slots", func() { thousand = claim(t, s, "r1", batch("rt", 1, 1000, time.Minute)...) }, 1},
		{"claim of 2,500 slots", func() { many = claim(t, s, "r1", batch("rt", 1001, 2500, time.Minute)...) }, 3},
		{"renew", func() { mustDo(t, s.Renew(ctx, slotstore.RenewParams{Ref: one[0].Claim.Ref, Lease: time.Minute})) }, 1},
		{"finish", func() {
			mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: one[0].Claim.Ref, Outcome: slotstore.Succeeded}))
		}, 1},
		{"release", func() { mustDo(t, s.Release(ctx, thousand[0].Claim.Ref)) }, 1},
		{"history of one job", func() {
			_, err := s.History(ctx, slotstore.HistoryParams{Job: "rt", Limit: 10})
			mustDo(t, err)
		}, 1},
		{"finish with a retry", func() {
			mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: thousand[1].Claim.Ref, Outcome: slotstore.Failed, RetryAt: time.Now()}))
		}, 1},
		{"claim with replace of 3,500 running slots", func() {
			r := batch("rt", 5000, 1, time.Minute)[0]
			r.Overlap = policy.OverlapReplace
			if res := claim(t, s, "r1", r); len(res[0].Replaced) < 3000 {
				t.Errorf("replace claim replaced %d slots", len(res[0].Replaced))
			}
		}, 1},
		{"claim with forbid", func() {
			r := batch("rt", 5001, 1, time.Minute)[0]
			r.Overlap = policy.OverlapForbid
			if res := claim(t, s, "r1", r); res[0].Status != slotstore.Skipped {
				t.Errorf("forbid claim: %v", res[0].Status)
			}
		}, 1},
		{"skip of 1,000 slots", func() {
			reqs := make([]slotstore.SkipRequest, 1000)
			for i, r := range batch("rt", 6000, 1000, time.Minute) {
				reqs[i] = slotstore.SkipRequest{Job: r.Job, Slot: r.Slot, Reason: "missed"}
			}
			res, err := s.Skip(ctx, slotstore.SkipParams{Replica: "r1", Requests: reqs})
			if err != nil || res[999].Status != slotstore.Skipped {
				t.Errorf("skip: %v", err)
			}
		}, 1},
		{"set pause", func() { mustDo(t, s.SetPause(ctx, slotstore.PauseParams{Job: "rt", Paused: true})) }, 1},
		{"pauses", func() {
			p, err := s.Pauses(ctx)
			mustDo(t, err)
			if len(p.Jobs) != 1 || p.Notes["rt"].At.IsZero() {
				t.Errorf("pauses: %+v", p)
			}
		}, 1},
		{"beat", func() { mustDo(t, s.Beat(ctx, slotstore.Beat{Replica: "r1", TTL: time.Minute})) }, 1},
		{"replicas", func() {
			rs, err := s.Replicas(ctx)
			mustDo(t, err)
			if len(rs) != 2 {
				t.Errorf("replicas: %+v", rs)
			}
		}, 1},
	}
	for _, o := range ops {
		before := hook.n.Load()
		got := stats.count(o.op)
		trips := hook.n.Load() - before
		if got["evalsha"] != o.calls || got["eval"] != 0 || trips != 1 {
			t.Errorf("%s: %d round trips, commands %v; want 1 round trip, %d EVALSHA", o.name, trips, got, o.calls)
		}
		t.Logf("%s: %d round trip, %d EVALSHA; commands run (scripts' included) %v", o.name, trips, got["evalsha"], got)
	}
	won(t, thousand)
	won(t, many)
}

// warm runs every script of s once on slots of job, so that the server
// caches them all, and claims a batch large enough to need a pipeline, so
// that the client has a connection for pipelines too.
func warm(t *testing.T, s slotstore.Store, job string) {
	t.Helper()
	ctx := t.Context()
	res := claim(t, s, "warm", batch(job, 10000, 1001, time.Minute)...)
	mustDo(t, s.Renew(ctx, slotstore.RenewParams{Ref: res[0].Claim.Ref, Lease: time.Minute}))
	mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}))
	mustDo(t, s.Release(ctx, res[1].Claim.Ref))
	_, err := s.History(ctx, slotstore.HistoryParams{Job: job})
	mustDo(t, err)
	_, err = s.Prune(ctx)
	mustDo(t, err)
	mustDo(t, s.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: true}))
	mustDo(t, s.SetPause(ctx, slotstore.PauseParams{Job: job}))
	_, err = s.Pauses(ctx)
	mustDo(t, err)
	mustDo(t, s.Beat(ctx, slotstore.Beat{Replica: "warm", TTL: time.Minute}))
	_, err = s.Replicas(ctx)
	mustDo(t, err)
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRoundTripsCluster: in a Cluster a batch is one script call per hash
// slot (and per 1,000 slots), all sent at once, plus one SADD of its job
// names; jobs that share a hash slot share a call.
func TestRoundTripsCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	s := open(t, c.Addrs()...)
	stats := newCommandStats(t, c.Addrs()...)
	ctx := t.Context()
	warm(t, s, "warm")

	got := stats.count(func() { won(t, claim(t, s, "r1", batch("one-job", 0, 1000, time.Minute)...)) })
	if got["evalsha"] != 1 || got["eval"] != 0 || got["sadd"] != 1 {
		t.Errorf("claim of 1,000 slots of one job: %v, want one EVALSHA and one SADD", got)
	}
	t.Logf("claim of 1,000 slots: commands run on the masters (scripts' included) %v", got)

	a, b := sameSlot(t, c.Addrs()[0])
	reqs := append(batch(a, 0, 10, time.Minute), batch(b, 0, 10, time.Minute)...)
	reqs = append(reqs, batch("elsewhere", 0, 10, time.Minute)...)
	got = stats.count(func() { won(t, claim(t, s, "r1", reqs...)) })
	if got["evalsha"]+got["eval"] != 2 || got["sadd"] != 1 {
		t.Errorf("claim of jobs %q and %q (one hash slot) and another: %v, want two script calls and one SADD", a, b, got)
	}

	res := claim(t, s, "r1", batch("one-job", 2000, 2, time.Minute)...)
	for _, o := range []struct {
		name string
		op   func() error
	}{
		{"renew", func() error { return s.Renew(ctx, slotstore.RenewParams{Ref: res[0].Claim.Ref, Lease: time.Minute}) }},
		{"finish", func() error {
			return s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded})
		}},
		{"release", func() error { return s.Release(ctx, res[1].Claim.Ref) }},
	} {
		var err error
		got := stats.count(func() { err = o.op() })
		mustDo(t, err)
		if got["evalsha"] != 1 || got["eval"] != 0 {
			t.Errorf("%s: %v, want one EVALSHA", o.name, got)
		}
		t.Logf("%s: commands run on the masters (scripts' included) %v", o.name, got)
	}
}

// sameSlot finds two job names whose keys the Cluster at addr puts in one
// hash slot, asking the server rather than trusting the client's hashing.
func sameSlot(t *testing.T, addr string) (string, string) {
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	bySlot := map[int64]string{}
	for i := range 20000 {
		job := fmt.Sprintf("j%d", i)
		slot, err := cl.ClusterKeySlot(t.Context(), "x{"+job+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := bySlot[slot]; ok {
			return other, job
		}
		bySlot[slot] = job
	}
	t.Fatal("no two jobs share a hash slot")
	return "", ""
}
