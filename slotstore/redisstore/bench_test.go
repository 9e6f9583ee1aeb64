package redisstore_test

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// BenchmarkClaimBatch1000 claims batches of 1,000 new slots of one job on a
// private server and reports claims per second. When redis-benchmark is on
// PATH it then runs `redis-benchmark -t set -q -n 100000` against the same
// server and reports its SETs per second beside, for scale.
func BenchmarkClaimBatch1000(b *testing.B) {
	r := testserver.StartRedis(b)
	s := openWith(b, redisstore.Options{Addrs: []string{r.Addr()}})
	claimed := 0
	for b.Loop() {
		reqs := batch("bench", claimed, 1000, time.Minute)
		res, err := s.Claim(b.Context(), slotstore.ClaimParams{Replica: "r1", Requests: reqs})
		if err != nil || res[999].Status != slotstore.Won {
			b.Fatalf("claim of 1,000 slots: %v", err)
		}
		claimed += len(reqs)
	}
	b.ReportMetric(float64(claimed)/b.Elapsed().Seconds(), "claims/s")
	if set, ok := redisBenchmarkSet(b, r.Addr(), "-n", "100000"); ok {
		b.ReportMetric(set, "redis-set/s")
	}
}

var setRate = regexp.MustCompile(`SET: ([0-9.]+) requests per second`)

// redisBenchmarkSet runs redis-benchmark's SET test against addr, with the
// extra arguments, and returns its requests per second.
func redisBenchmarkSet(b *testing.B, addr string, extra ...string) (float64, bool) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Logf("redis-benchmark not on PATH: no SET figure")
		return 0, false
	}
	_, port, _ := strings.Cut(addr, ":")
	args := append([]string{"-h", "127.0.0.1", "-p", port, "-t", "set", "-q"}, extra...)
	out, err := exec.CommandContext(b.Context(), bin, args...).Output()
	m := setRate.FindAllSubmatch(out, -1)
	if err != nil || len(m) == 0 {
		b.Logf("redis-benchmark %s: %v\n%s", strings.Join(args, " "), err, out)
		return 0, false
	}
	rate, err := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	b.Logf("redis-benchmark %s: %s", strings.Join(args, " "), strings.TrimSpace(string(m[len(m)-1][0])))
	return rate, err == nil
}

// BenchmarkArbitrate3Replicas measures what one Redis arbitrates: three
// stores, one per replica, each on its own connections, claim the same
// batches of 1,000 fresh slots, spread over 10,000 jobs, two batches in
// flight a replica; each slot is won by one and lost by two. A slot is fresh
// as the engine claims it when it comes due: no marker yet, its job's
// generation older, NotBefore (the slot) passed, overlap allow. It reports
// slots decided per second, `redis-benchmark -t set -c 50` on the same
// server in the same run when redis-benchmark is on PATH, their ratio, and
// the microseconds Redis spent in the claim script per slot decided (its
// three claims), from INFO commandstats.
func BenchmarkArbitrate3Replicas(b *testing.B) {
	const (
		replicas = 3
		inFlight = 2
		jobs     = 10000
		size     = 1000
	)
	r := testserver.StartRedis(b)
	stores := make([]*redisstore.Store, replicas)
	for i := range stores {
		stores[i] = openWith(b, redisstore.Options{Addrs: []string{r.Addr()}, Prefix: "arb:"})
	}
	ctx := b.Context()
	// Every job has been known for a day: its generation began before the
	// slots, which are an hour old at most.
	now := time.Now().UTC().Truncate(time.Second)
	pipe := stores[0].Client().Pipeline()
	for j := range jobs {
		pipe.Set(ctx, "arb:{"+benchJob(j)+"}:gen", now.Add(-24*time.Hour).UnixMilli(), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatalf("begin the generations: %v", err)
	}
	base := now.Add(-time.Hour)
	batches := make([][]slotstore.ClaimRequest, b.N)
	for k := range batches {
		reqs := make([]slotstore.ClaimRequest, size)
		for i := range reqs {
			n := k*size + i
			slot := base.Add(time.Duration(n/jobs) * time.Second)
			reqs[i] = slotstore.ClaimRequest{Job: benchJob(n % jobs), Slot: slot, Lease: time.Minute, NotBefore: slot}
		}
		batches[k] = reqs
	}
	winners := make([]atomic.Int32, b.N*size)
	stats := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer stats.Close()
	if err := stats.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatalf("config resetstat: %v", err)
	}

	b.ResetTimer()
	var wg sync.WaitGroup
	for rep, s := range stores {
		var next atomic.Int64
		for range inFlight {
			wg.Go(func() {
				for k := int(next.Add(1)) - 1; k < b.N; k = int(next.Add(1)) - 1 {
					res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: fmt.Sprint("r", rep), Requests: batches[k]})
					if err != nil {
						b.Errorf("replica %d, batch %d: %v", rep, k, err)
						return
					}
					for i, c := range res {
						if c.Status == slotstore.Won && !winners[k*size+i].CompareAndSwap(0, int32(rep+1)) {
							b.Errorf("batch %d slot %d won by replicas %d and %d", k, i, winners[k*size+i].Load()-1, rep)
						}
					}
				}
			})
		}
	}
	wg.Wait()
	b.StopTimer()

	slots := b.N * size
	for i := range winners {
		if winners[i].Load() == 0 {
			b.Fatalf("slot %d of %d won by nobody", i, slots)
		}
	}
	rate := float64(slots) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "slots/s")
	b.ReportMetric(0, "ns/op")
	if us, ok := scriptMicros(b, stats); ok {
		b.ReportMetric(us/float64(slots), "redis-µs/slot")
	}
	if set, ok := redisBenchmarkSet(b, r.Addr(), "-c", "50", "-n", "200000"); ok {
		b.ReportMetric(set, "redis-set/s")
		b.ReportMetric(rate/set, "slots/set")
	}
}

func benchJob(j int) string { return fmt.Sprintf("job-%05d", j) }

// scriptMicros returns the microseconds Redis spent running scripts
// (EVALSHA and EVAL) since its statistics were last reset.
func scriptMicros(b *testing.B, c *redis.Client) (float64, bool) {
	info, err := c.Info(b.Context(), "commandstats").Result()
	if err != nil {
		b.Logf("info commandstats: %v", err)
		return 0, false
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name != "cmdstat_evalsha" && name != "cmdstat_eval" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				us, _ := strconv.ParseFloat(v, 64)
				total += us
			}
		}
	}
	return total, true
}
