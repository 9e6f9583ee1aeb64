package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// startPatience bounds the wait for a server to answer after it starts.
	startPatience = 10 * time.Second
	// startAttempts is how many free ports a starter tries before it gives
	// up: another process may take a port between the check and the bind.
	startAttempts = 3
)

// Redis is a private redis-server started by StartRedis.
type Redis struct {
	bin  string
	dir  string
	conf string // a config file to start with, or ""
	port int
	args []string // without --port

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// StartRedis starts a redis-server on a free loopback port with no
// persistence, in a temporary directory of its own, waits until it answers
// PING (or NOAUTH, when extraArgs set a password) and stops it when t ends. extraArgs are passed after the defaults, so
// they may override them ("--maxmemory", "10mb").
func StartRedis(t testing.TB, extraArgs ...string) *Redis {
	t.Helper()
	return startRedis(t, "", func(int) []string { return extraArgs })
}

// startRedis starts a server whose extra arguments extra returns for the
// port being tried; it is called again for every port, so it may pick other
// ports of its own.
func startRedis(t testing.TB, conf string, extra func(port int) []string) *Redis {
	t.Helper()
	bin := need(t, "redis-server", "redis-server")
	dir := t.TempDir()
	if conf != "" {
		path := filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatalf("testserver: write config: %v", err)
		}
		conf = path
	}
	var err error
	for range startAttempts {
		r := &Redis{bin: bin, dir: dir, conf: conf, port: FreePort(t)}
		r.args = append([]string{
			"--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", "redis.log", "--daemonize", "no",
		}, extra(r.port)...)
		if err = r.start(); err == nil {
			t.Cleanup(r.Stop)
			return r
		}
	}
	t.Fatalf("testserver: start redis-server: %v\n%s", err, tail(filepath.Join(dir, "redis.log")))
	return nil
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Restart kills the server, as a crash would, and starts it again on the
// same port. With no persistence it comes back empty.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	r.Stop()
	if err := r.start(); err != nil {
		t.Fatalf("testserver: restart redis-server on %s: %v\n%s", r.Addr(), err, tail(filepath.Join(r.dir, "redis.log")))
	}
}

// Stop kills the server and waits for it to exit. It is safe to call more
// than once.
func (r *Redis) Stop() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// start runs redis-server and waits until it answers PING, or fails if it
// exits or stays silent for startPatience.
func (r *Redis) start() error {
	var args []string
	if r.conf != "" {
		args = append(args, r.conf) // redis-server wants the file first
	}
	args = append(append(args, "--port", strconv.Itoa(r.port)), r.args...)
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	OrphanProof(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()

	deadline := time.Now().Add(startPatience)
	for {
		// A server started with --requirepass answers NOAUTH: it is up.
		reply, err := ask(r.Addr(), time.Second, "PING")
		if (err == nil && reply == "PONG") || (err != nil && strings.Contains(err.Error(), "NOAUTH")) {
			return nil
		}
		select {
		case <-exited:
			r.Stop()
			return fmt.Errorf("redis-server on port %d exited: %v", r.port, cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return fmt.Errorf("redis-server on port %d did not answer PING within %v: %v", r.port, startPatience, err)
		}
	}
}

// RedisCluster is a private Redis Cluster started by StartRedisCluster.
type RedisCluster struct {
	nodes []*Redis
}

// StartRedisCluster starts masters redis-server --cluster-enabled yes
// (at least 3, as redis-cli --cluster create requires), joins them with no
// replicas, and waits until every node reports cluster_state:ok and knows
// every node and all 16384 slots. The nodes stop when t ends.
func StartRedisCluster(t testing.TB, masters int) *RedisCluster {
	t.Helper()
	if masters < 3 {
		t.Fatalf("testserver: a Redis Cluster needs at least 3 masters, not %d", masters)
	}
	cli := need(t, "redis-cli", "redis-server")
	c := &RedisCluster{}
	for range masters {
		c.nodes = append(c.nodes, startRedis(t, "", func(port int) []string {
			bus := FreePort(t)
			for bus == port {
				bus = FreePort(t)
			}
			return []string{
				"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000",
			}
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testserver: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitReady(t, masters)
	return c
}

// Addrs are the nodes' host:port addresses.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// waitReady waits until every node sees a healthy cluster of n nodes.
func (c *RedisCluster) waitReady(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range c.Addrs() {
		for {
			info, err := ask(addr, time.Second, "CLUSTER", "INFO")
			if err == nil && infoField(info, "cluster_state") == "ok" &&
				infoField(info, "cluster_slots_ok") == "16384" &&
				infoField(info, "cluster_known_nodes") == strconv.Itoa(n) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testserver: cluster node %s not ready: %v\n%s", addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// StartRedisSentinel starts a Sentinel on a free loopback port that watches
// master under the name name, and stops it when t ends. Sentinel rewrites
// its config file, so each one gets its own, in its own directory.
func StartRedisSentinel(t testing.TB, master *Redis, name string) *Redis {
	t.Helper()
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n",
		name, master.port, name)
	return startRedis(t, conf, func(int) []string { return []string{"--sentinel"} })
}

// tail returns the last lines of the log at path, for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}
