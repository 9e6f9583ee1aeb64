package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// waitTimeout is the WaitTimeout of the stores of these tests: short, so a
// wait that falls short ends soon, and far longer than a replica on
// loopback takes to acknowledge.
const waitTimeout = 200 * time.Millisecond

// TestWaitReplicas: with WaitReplicas 1 and a real replica, claims,
// renewals and finishes succeed, and the replica has each write when the
// call returns. While the replica is stopped (SIGSTOP: its connection
// stays open, it acknowledges nothing) or gone, each of them is an unknown
// outcome that the master nevertheless applied, including a retried
// Finish, sent on other connections, of a slot the first Finish made done.
// A store that wants more replicas than there are never succeeds.
func TestWaitReplicas(t *testing.T) {
	m := testserver.StartRedis(t)
	rep := startReplica(t, m)
	o := redisstore.Options{Addrs: []string{m.Addr()}, Prefix: "wait:", WaitReplicas: 1, WaitTimeout: waitTimeout, ReadTimeout: 2 * time.Second}
	s, other := openWith(t, o), openWith(t, o)
	ctx := t.Context()
	onMaster, onReplica := plainClient(t, m.Addr()), plainClient(t, rep.Addr())
	state := func(c *redis.Client, ref slotstore.Ref) string {
		t.Helper()
		v, err := c.HGet(ctx, markerKey(o.Prefix, ref), "s").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("read marker of %+v: %v", ref, err)
		}
		return v
	}

	res := claim(t, s, "r1", batch("w", 0, 3, time.Minute)...)
	won(t, res)
	if got := state(onReplica, res[0].Claim.Ref); got != "running" {
		t.Errorf("replica's marker after the claim returned: %q, want running", got)
	}
	mustDo(t, s.Renew(ctx, slotstore.RenewParams{Ref: res[0].Claim.Ref, Lease: time.Minute}))
	mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}))
	if got := state(onReplica, res[0].Claim.Ref); got != "done" {
		t.Errorf("replica's marker after the finish returned: %q, want done", got)
	}

	resume := pause(t, rep)
	notReplicated := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, slotstore.ErrOutcomeUnknown) || !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Errorf("%s while the replica is stopped: %v, want an unknown outcome, not replicated", what, err)
		}
	}
	_, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: batch("w", 10, 1, time.Minute)})
	notReplicated("claim", err)
	t.Logf("claim while the replica is stopped: %v", err)
	if got := state(onMaster, slotstore.Ref{Job: "w", Slot: batch("w", 10, 1, 0)[0].Slot}); got != "running" {
		t.Errorf("master's marker of the unknown claim: %q, want running (the master applied it)", got)
	}
	notReplicated("renew", s.Renew(ctx, slotstore.RenewParams{Ref: res[1].Claim.Ref, Lease: time.Minute}))
	notReplicated("finish", s.Finish(ctx, slotstore.FinishParams{Ref: res[1].Claim.Ref, Outcome: slotstore.Succeeded}))
	if got := state(onMaster, res[1].Claim.Ref); got != "done" {
		t.Fatalf("master's marker of the unknown finish: %q, want done", got)
	}
	// A retried Finish, from another store, finds the slot done and still
	// waits. (Redis 7.0 makes WAIT cover every write the master had made by
	// a connection's last command; later versions only the connection's own
	// writes, which is why finish.lua writes the state again.)
	notReplicated("retried finish", other.Finish(ctx, slotstore.FinishParams{Ref: res[1].Claim.Ref, Outcome: slotstore.Succeeded}))

	resume()
	// The replica catches up and acknowledges again.
	poll.Until(t, 10*time.Second, "finish once the replica is back", func() error {
		return other.Finish(ctx, slotstore.FinishParams{Ref: res[1].Claim.Ref, Outcome: slotstore.Succeeded})
	})
	if got := state(onReplica, res[1].Claim.Ref); got != "done" {
		t.Errorf("replica's marker once it is back: %q, want done", got)
	}
	won(t, claim(t, s, "r1", batch("w", 20, 1, time.Minute)...))

	more := o
	more.WaitReplicas = 2
	_, err = openWith(t, more).Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: batch("w", 30, 1, time.Minute)})
	if !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Errorf("claim wanting 2 replicas of 1: %v, want not replicated", err)
	}

	rep.Stop()
	_, err = s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: batch("w", 40, 1, time.Minute)})
	notReplicated("claim with the replica gone", err)
	// Calls that change nothing still wait, and report it; a lost lease is
	// reported as such.
	if err := s.Release(ctx, res[2].Claim.Ref); err != nil {
		t.Errorf("release, which does not wait: %v", err)
	}
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: res[2].Claim.Ref, Lease: time.Minute}); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("renew of a released slot: %v, want ErrLeaseLost", err)
	}
}

// TestWaitReplicasCluster: in a Cluster, WAIT goes, on the calls' own
// connection, to the master of each call's hash slot. One master has a
// replica and the others none: claims, renewals and finishes of a job on
// that master succeed every time, those of a job elsewhere never do, and a
// batch of both is an unknown outcome.
func TestWaitReplicasCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	base := open(t, c.Addrs()...)
	withReplica, alone, master := jobsOnTwoMasters(t, base)
	addClusterReplica(t, master.Options().Addr, withReplica)
	s := openWith(t, redisstore.Options{Addrs: c.Addrs(), WaitReplicas: 1, WaitTimeout: waitTimeout, ReadTimeout: 2 * time.Second})
	ctx := t.Context()

	for i := range 5 {
		res := claim(t, s, "r1", batch(withReplica, i, 1, time.Minute)...)
		won(t, res)
		mustDo(t, s.Renew(ctx, slotstore.RenewParams{Ref: res[0].Claim.Ref, Lease: time.Minute}))
		mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}))
	}
	_, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: batch(alone, 0, 1, time.Minute)})
	if !errors.Is(err, slotstore.ErrOutcomeUnknown) || !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Errorf("claim of %q, whose master has no replica: %v, want an unknown outcome, not replicated", alone, err)
	}
	reqs := append(batch(withReplica, 10, 1, time.Minute), batch(alone, 10, 1, time.Minute)...)
	if _, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: reqs}); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Errorf("claim of %q and %q: %v, want not replicated", withReplica, alone, err)
	}
}

// startReplica starts a redis-server replicating master and waits until
// it acknowledges writes.
func startReplica(t *testing.T, master *testserver.Redis) *testserver.Redis {
	t.Helper()
	syncAtOnce(t, master.Addr())
	host, port, _ := net.SplitHostPort(master.Addr())
	rep := testserver.StartRedis(t, "--replicaof", host, port)
	waitAcked(t, master.Addr(), "probe")
	return rep
}

// addClusterReplica starts a Cluster node and makes it the replica of the
// master at addr, then waits until it acknowledges a write of job's hash
// slot.
func addClusterReplica(t *testing.T, addr, job string) {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not on PATH")
	}
	id, err := plainClient(t, addr).ClusterMyID(t.Context()).Result()
	if err != nil {
		t.Fatalf("cluster myid of %s: %v", addr, err)
	}
	syncAtOnce(t, addr)
	node := testserver.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(testserver.FreePort(t)), "--cluster-node-timeout", "5000")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "--cluster", "add-node", node.Addr(), addr,
		"--cluster-slave", "--cluster-master-id", id).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster add-node: %v\n%s", err, out)
	}
	waitAcked(t, addr, "probe{"+job+"}")
}

// syncAtOnce makes the master at addr send its data to a new replica at
// once, not after the five seconds it waits by default for more replicas
// to share the transfer.
func syncAtOnce(t *testing.T, addr string) {
	t.Helper()
	if err := plainClient(t, addr).ConfigSet(t.Context(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatalf("config set on %s: %v", addr, err)
	}
}

// waitAcked waits until the master at addr has a replica that
// acknowledges a write to key, which the master must serve. A replica
// counted online after its first sync may not yet get the master's stream,
// which starts on its first acknowledgement, up to a second later.
func waitAcked(t *testing.T, addr, key string) {
	t.Helper()
	c := plainClient(t, addr)
	poll.Until(t, 20*time.Second, "a replica of "+addr+" to acknowledge writes", func() error {
		p := c.Pipeline()
		p.Incr(t.Context(), key)
		w := p.Do(t.Context(), "wait", 1, 100)
		_, err := p.Exec(t.Context())
		if n, _ := w.Int(); err == nil && n != 1 {
			return fmt.Errorf("WAIT counted %d replicas", n)
		}
		return err
	})
}

// pause stops the server r with SIGSTOP, so its connections stay open and
// it answers nothing, and returns the function that resumes it (also
// called when t ends).
func pause(t *testing.T, r *testserver.Redis) func() {
	t.Helper()
	info, err := plainClient(t, r.Addr()).Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatalf("info server of %s: %v", r.Addr(), err)
	}
	pid := 0
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatalf("no process_id in the info of %s", r.Addr())
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop redis-server %d: %v", pid, err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

// plainClient is a client of the server at addr, closed when t ends.
func plainClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// markerKey is the key of the marker ref names (see keys.go).
func markerKey(prefix string, ref slotstore.Ref) string {
	return prefix + "{" + ref.Job + "}:m:" + strconv.FormatInt(ref.Slot.Unix(), 10)
}
