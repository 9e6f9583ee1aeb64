package backend_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/etcd"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// review2Term wins one term of duty on el and resigns at once, returning
// its fence.
func review2Term(t *testing.T, el leader.Elector, replica string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var fence int64
	err := el.Lead(ctx, leader.Params{Name: "fanout", Replica: replica, Lease: time.Second}, func(_ context.Context, term leader.Term) {
		fence = term.Fence
		cancel()
	})
	if err != nil {
		t.Fatalf("Lead: %v", err)
	}
	return fence
}

// On an etcd store the duties' fences are the store's fence
// base plus a revision, and the base is read once, when the store opens.
// When the prefix loses its keys while replicas run (every key deleted,
// the case the store's generations exist for), a replica that opens
// afterwards records a new base, its clock in microseconds, while the
// replicas already running keep the old one: terms won by an old replica
// are then fenced far below the terms a new replica won before them, and
// fences go back and forth between replicas from then on. The same holds
// for the slot fences of the two stores.
func TestDutyFencesGrowAfterThePrefixLostItsKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx := t.Context()
	etcd := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	cfg := backend.Config{Kind: "etcd", Options: etcdstore.Options{Endpoints: etcd.Endpoints(), Prefix: fmt.Sprintf("review2-%d/", os.Getpid())}}
	log := slog.New(slog.DiscardHandler)
	open := func() leader.Elector {
		st, err := backend.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		el, _, err := backend.Elector(ctx, st, log)
		if err != nil {
			t.Fatal(err)
		}
		return el
	}
	old := open()
	first := review2Term(t, old, "old")

	admin, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Delete(ctx, cfg.Options.(etcdstore.Options).Prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}

	second := review2Term(t, open(), "new") // a replica started after the loss
	third := review2Term(t, old, "old")     // the old replica leads again
	t.Logf("fences: old %d, new %d, old again %d", first, second, third)
	if !(first < second && second < third) {
		t.Errorf("terms won in turn by the old replica, a replica opened after the prefix lost its keys, and the old one again have fences %d, %d, %d: not growing",
			first, second, third)
	}
}

// review2Proxy forwards TCP connections to a target that can change:
// Retarget drops every connection, and the next ones reach the new target,
// as a client reaching a service by a fixed address sees it replaced.
type review2Proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startReview2Proxy(t *testing.T, target string) *review2Proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &review2Proxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(u, c); u.Close() })
			p.wg.Go(func() { io.Copy(c, u); c.Close() })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.Retarget(target)
		p.wg.Wait()
	})
	return p
}

func (p *review2Proxy) Retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// , as a replica lives it: the single etcd member it reaches at a
// fixed address is replaced by an empty one (a pod whose storage was an
// emptyDir). The store and the elector go on under the fence base they
// read when the store opened, and the new cluster's revisions start near
// 1: the replica's next term is fenced below its last, though docs/stores.md
// says fences are never reused after "a cluster replaced by an empty or
// restored one". Its slot fences fall back the same way.
func TestDutyFencesGrowWhenTheClusterIsReplacedUnderARunningReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two etcd clusters")
	}
	ctx := t.Context()
	old := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	host := func(c *testserver.EtcdCluster) string { return strings.TrimPrefix(c.Endpoints()[0], "http://") }
	p := startReview2Proxy(t, host(old))
	cfg := backend.Config{Kind: "etcd", Options: etcdstore.Options{Endpoints: []string{"http://" + p.ln.Addr().String()}}}
	st, err := backend.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	el, _, err := backend.Elector(ctx, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientv3.New(clientv3.Config{Endpoints: old.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 { // the old cluster's life
		if _, err := admin.Put(ctx, "elsewhere", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()
	before := review2Term(t, el, "r1")

	fresh := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	old.Stop()
	p.Retarget(host(fresh))
	after := review2Term(t, el, "r1")
	t.Logf("fences: %d on the old cluster, %d on the empty one that replaced it", before, after)
	if after <= before {
		t.Errorf("the running replica's first term on the cluster that replaced the old one has fence %d, not above its last, %d", after, before)
	}
}

// An endpoint whose host a ${VAR} should have filled is
// accepted: the loader reports an unset variable only when it leaves the
// whole value empty, and the etcd block's validation takes "http://:2379"
// for a URL with a host (":2379"). The store then dials this host's port
// 2379, whatever etcd answers there, instead of saying which variable is
// missing, as it does for an empty endpoints list.
func TestEndpointWithoutAHostIsRefused(t *testing.T) {
	const unset = "SLOTCRON_REVIEW2_NEVER_SET"
	if _, ok := os.LookupEnv(unset); ok {
		t.Skipf("%s is set", unset)
	}
	conf := `store: {kind: etcd, etcd: {endpoints: ["http://${` + unset + `}:2379"]}}` + "\n"
	cfg, err := scheduler.Parse("slotcron.yaml", []byte(conf))
	if err == nil {
		err = cfg.Validate(jobs.NewRegistry())
	}
	if err == nil {
		t.Errorf("%q is accepted: the endpoint has no host (its ${%s} is not set)", strings.TrimSpace(conf), unset)
	} else if !strings.Contains(err.Error(), "endpoints") {
		t.Errorf("refused without naming the endpoints: %v", err)
	}
	if err := (etcdstore.Options{Endpoints: []string{"http://:2379"}}).Validate(); err == nil {
		t.Error(`etcdstore.Options{Endpoints: ["http://:2379"]}.Validate() accepts an endpoint with no host`)
	}
}

// request_timeout is how long the etcd store waits on one
// member before it sends the request to another (docs/stores.md: "a
// renewal or finish must land within the holder's trust window"). One
// longer than a job's trust window means a renewal held by a frozen or
// dying member is never sent elsewhere in time: the holder loses the slot
// to a takeover whenever one member stalls, which is what the etcd store
// exists to survive. The configuration accepts it without a word.
func TestRequestTimeoutLongerThanTheLeaseIsRefused(t *testing.T) {
	conf := "store: {kind: etcd, etcd: {endpoints: [\"http://127.0.0.1:2379\"], request_timeout: 10s}}\n" +
		"defaults: {lease: 2s}\n" +
		"jobs: {tick: {schedule: \"* * * * * *\"}}\n"
	cfg, err := scheduler.Parse("slotcron.yaml", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	reg := jobs.NewRegistry()
	reg.Register("tick", func(context.Context, jobs.Run) error { return nil })
	if err := cfg.Validate(reg); err == nil {
		t.Error("store.etcd.request_timeout 10s with a 2s lease (a trust window of 1.8s) is accepted")
	}
}
