package testserver

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/internal/poll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRedisRestartLosesData(t *testing.T) {
	r := StartRedis(t)
	if _, err := ask(r.Addr(), time.Second, "SET", "k", "v"); err != nil {
		t.Fatalf("set: %v", err)
	}
	if v, err := ask(r.Addr(), time.Second, "GET", "k"); err != nil || v != "v" {
		t.Fatalf("get before restart: %q, %v", v, err)
	}
	r.Restart(t)
	if n, err := ask(r.Addr(), time.Second, "DBSIZE"); err != nil || n != "0" {
		t.Fatalf("dbsize after restart: %q, %v; want 0", n, err)
	}
	r.Stop()
	if _, err := ask(r.Addr(), 200*time.Millisecond, "PING"); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

func TestRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := StartRedisCluster(t, 3)
	for _, addr := range c.Addrs() {
		info, err := ask(addr, time.Second, "CLUSTER", "INFO")
		if err != nil || infoField(info, "cluster_size") != "3" {
			t.Fatalf("%s: cluster info %q, %v", addr, info, err)
		}
	}
}

func TestProxy(t *testing.T) {
	r := StartRedis(t)
	p := StartProxy(t, r.Addr())
	ping := func() error {
		reply, err := ask(p.Addr(), 200*time.Millisecond, "PING")
		if err == nil && reply != "PONG" {
			t.Fatalf("ping: %q", reply)
		}
		return err
	}
	if err := ping(); err != nil {
		t.Fatalf("ping through the proxy: %v", err)
	}

	// A connection held open across the failures, to see them happen to it.
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	p.Blackhole()
	err = ping()
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("ping through a blackhole: %v, want a timeout", err)
	}
	p.Cut()
	if err := ping(); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("ping through a cut proxy: %v, want connection refused", err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection survived Cut")
	}
	p.Restore()
	if err := ping(); err != nil {
		t.Fatalf("ping after restore: %v", err)
	}
}

func TestRedisSentinel(t *testing.T) {
	m := StartRedis(t)
	s := StartRedisSentinel(t, m, "main")
	info, err := ask(s.Addr(), time.Second, "INFO", "sentinel")
	if err != nil || !strings.Contains(info, "name=main,status=ok,address="+m.Addr()) {
		t.Fatalf("sentinel info: %q, %v", info, err)
	}
}

func TestEtcdClusterSurvivesItsLeader(t *testing.T) {
	c := StartEtcd(t, EtcdConfig{})
	if len(c.Endpoints()) != 3 {
		t.Fatalf("endpoints %v, want 3", c.Endpoints())
	}
	old := waitEtcdLeader(t, c, nil)
	old.Kill()
	next := waitEtcdLeader(t, c, old)
	if err := old.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := next.Freeze(); err != nil {
		t.Fatal(err)
	}
	waitEtcdLeader(t, c, next)
	if err := next.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := next.waitHealthy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// waitEtcdLeader waits until a member other than not leads c.
func waitEtcdLeader(t *testing.T, c *EtcdCluster, not *EtcdMember) *EtcdMember {
	t.Helper()
	var l *EtcdMember
	poll.Until(t, 20*time.Second, fmt.Sprintf("a leader other than %v", not), func() error {
		if l = c.Leader(); l == nil || l == not {
			return fmt.Errorf("the leader is %v", l)
		}
		return nil
	})
	return l
}
