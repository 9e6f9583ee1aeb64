package redisstore_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

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
	if set, ok := redisBenchmarkSet(b, r.Addr()); ok {
		b.ReportMetric(set, "redis-set/s")
	}
}

var setRate = regexp.MustCompile(`SET: ([0-9.]+) requests per second`)

// redisBenchmarkSet runs redis-benchmark's SET test against addr and returns
// its requests per second.
func redisBenchmarkSet(b *testing.B, addr string) (float64, bool) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Logf("redis-benchmark not on PATH: no SET figure")
		return 0, false
	}
	_, port, _ := strings.Cut(addr, ":")
	args := []string{"-h", "127.0.0.1", "-p", port, "-t", "set", "-q", "-n", "100000"}
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
