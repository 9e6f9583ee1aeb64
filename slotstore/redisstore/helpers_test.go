package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// batch returns n requests of job for consecutive seconds from the next
// hour on, starting at offset seconds: slots the generation of a job a
// fresh store has just begun covers, the hour being at least
// slotstore.ClaimLead away.
func batch(job string, offset, n int, lease time.Duration) []slotstore.ClaimRequest {
	base := time.Now().Add(slotstore.ClaimLead).UTC().Truncate(time.Hour).Add(time.Hour)
	reqs := make([]slotstore.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = slotstore.ClaimRequest{Job: job, Slot: base.Add(time.Duration(offset+i) * time.Second), Lease: lease}
	}
	return reqs
}

// claim claims reqs for replica and fails the test on an error or a result
// count that does not match.
func claim(t testing.TB, s slotstore.Store, replica string, reqs ...slotstore.ClaimRequest) []slotstore.ClaimResult {
	t.Helper()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: reqs})
	if err != nil {
		t.Fatalf("claim %d slots by %s: %v", len(reqs), replica, err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("claim %d slots by %s: %d results", len(reqs), replica, len(res))
	}
	return res
}

// won fails the test unless every result is Won.
func won(t testing.TB, res []slotstore.ClaimResult) {
	t.Helper()
	for i, r := range res {
		if r.Status != slotstore.Won {
			t.Fatalf("result %d: %v, want won (marker %+v)", i, r.Status, r.Marker)
		}
	}
}

// commandStats counts, for every server at addrs, the commands it ran
// between resetStats and now, as INFO commandstats reports them, summed over
// the servers. The INFO and CONFIG commands of the count itself are left
// out.
type commandStats struct {
	t       testing.TB
	clients []*redis.Client
}

func newCommandStats(t testing.TB, addrs ...string) *commandStats {
	c := &commandStats{t: t}
	for _, a := range addrs {
		cl := redis.NewClient(&redis.Options{Addr: a, DisableIdentity: true})
		t.Cleanup(func() { cl.Close() })
		c.clients = append(c.clients, cl)
	}
	return c
}

// reset zeroes the counters of every server.
func (c *commandStats) reset() {
	c.t.Helper()
	for _, cl := range c.clients {
		if err := cl.ConfigResetStat(c.t.Context()).Err(); err != nil {
			c.t.Fatalf("config resetstat: %v", err)
		}
	}
}

// read returns the calls of every command since reset, by command name.
func (c *commandStats) read() map[string]int {
	c.t.Helper()
	out := map[string]int{}
	for _, cl := range c.clients {
		info, err := cl.Info(c.t.Context(), "commandstats").Result()
		if err != nil {
			c.t.Fatalf("info commandstats: %v", err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			name, isCmd := strings.CutPrefix(name, "cmdstat_")
			if !ok || !isCmd || name == "info" || strings.HasPrefix(name, "config") {
				continue
			}
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "calls="); ok {
					n, _ := strconv.Atoi(v)
					out[name] += n
				}
			}
		}
	}
	return out
}

// count returns the commands op ran on the servers.
func (c *commandStats) count(op func()) map[string]int {
	c.t.Helper()
	c.reset()
	op()
	return c.read()
}

// bornAt makes the generation of job begin at when, as if the store had
// known the job since: it writes the job's generation key (see keys.go),
// which must not exist yet.
func bornAt(t testing.TB, s *redisstore.Store, job string, when time.Time) {
	t.Helper()
	key := s.Prefix() + "{" + job + "}:gen"
	if ok, err := s.Client().SetNX(t.Context(), key, when.UnixMilli(), 0).Result(); err != nil || !ok {
		t.Fatalf("set %s: %v, %v", key, ok, err)
	}
}
