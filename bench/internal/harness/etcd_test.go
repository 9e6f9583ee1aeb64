package harness

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const sampleMetrics = `# HELP etcd_server_proposals_committed_total The total number of consensus proposals committed.
# TYPE etcd_server_proposals_committed_total gauge
etcd_server_proposals_committed_total 1.234567e+06
# HELP etcd_server_leader_changes_seen_total The number of leader changes seen.
# TYPE etcd_server_leader_changes_seen_total counter
etcd_server_leader_changes_seen_total 2
# HELP grpc_server_msg_received_total Total number of RPC stream messages received on the server.
# TYPE grpc_server_msg_received_total counter
grpc_server_msg_received_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 40
grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 7
grpc_server_msg_received_total{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"} 2
grpc_server_msg_received_total{grpc_method="DeleteRange",grpc_service="etcdserverpb.KV",grpc_type="unary"} 1
grpc_server_msg_received_total{grpc_method="LeaseGrant",grpc_service="etcdserverpb.Lease",grpc_type="unary"} 3
grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 11
grpc_server_msg_received_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 5
grpc_server_msg_received_total{grpc_method="Status",grpc_service="etcdserverpb.Maintenance",grpc_type="unary"} 4
grpc_server_msg_received_total{grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"} 0
grpc_server_started_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 40
`

func TestParseEtcdMetrics(t *testing.T) {
	got, err := parseEtcdMetrics(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	want := etcdCounts{requests: 73, txn: 40, rng: 7, put: 3, lease: 14, watch: 5, proposals: 1234567, leaderChanges: 2}
	if got != want {
		t.Errorf("parseEtcdMetrics = %+v, want %+v", got, want)
	}
}

func TestParseEtcdMetricsRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no gRPC counter": "etcd_server_proposals_committed_total 5\n",
		"bad value":       `grpc_server_msg_received_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} many` + "\n",
		"no value":        `grpc_server_msg_received_total{grpc_method="Txn"}` + "\n",
	} {
		if c, err := parseEtcdMetrics(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parseEtcdMetrics = %+v, want an error", name, c)
		}
	}
}

func TestTally(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wins    [][]int
		decided int64
		bad     bool
	}{
		{"each batch won once", [][]int{{300, 0, 200}, {0, 300, 100}}, 900, false},
		{"a batch only one client finished", [][]int{{300, 0, 120}, {0, 300}}, 720, false},
		{"a slot won twice", [][]int{{300, 1}, {0, 300}}, 601, true},
		{"a slot nobody won", [][]int{{299, 0}, {0, 300}}, 599, true},
		{"an unfinished batch won twice", [][]int{{300, 200}, {0, 200}, {0}}, 700, true},
	} {
		decided, bad := tally(tc.wins, 300)
		if decided != tc.decided || (bad != "") != tc.bad {
			t.Errorf("%s: tally = %d, %q; want %d, bad %v", tc.name, decided, bad, tc.decided, tc.bad)
		}
	}
}

// TestEtcdCounts checks the round-trip counting on a real cluster: the
// members' counters grow by exactly the requests a client sent.
func TestEtcdCounts(t *testing.T) {
	e, eps := etcdEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := e.etcdRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		k := "count/" + itoa(i)
		if _, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).Then(clientv3.OpPut(k, "v")).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := c.Get(ctx, "count/", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}
	after, err := e.etcdRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := after.minus(before)
	if d.txn != 7 || d.rng != 3 || d.requests != 10 {
		t.Errorf("counted %+v, want 7 Txn and 3 Range, 10 requests in all", d)
	}
	if d.proposals < 7 {
		t.Errorf("%d raft proposals for 7 writes", d.proposals)
	}
	e.etcdDrop("count/")
	resp, err := c.Get(ctx, "count/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys left under count/ after etcdDrop", resp.Count)
	}
	if v := e.versions(); !strings.Contains(v, "etcd 3.") {
		t.Errorf("versions() = %q, want the etcd version", v)
	}
}

// TestEtcdTxnArbitration runs the etcd baseline of the arbitration
// section briefly: clients contend for every key, each is won once, and
// the keys are gone afterwards.
func TestEtcdTxnArbitration(t *testing.T) {
	e, eps := etcdEnv(t)
	o := &Options{ArbDuration: time.Second, ArbBatch: 300, ArbClients: 3}
	a := e.etcdTxn(context.Background(), o)
	if a.err != nil {
		t.Fatal(a.err)
	}
	// Every client finishes batch 0 at least, so it was decided whole.
	if a.bad != "" || a.decided < int64(o.ArbBatch) {
		t.Errorf("decided %d, bad %q; want at least %d and none bad", a.decided, a.bad, o.ArbBatch)
	}
	t.Logf("%d keys decided, %.0f a second", a.decided, a.perSec)
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(context.Background(), "st", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys left after the measurement", resp.Count)
	}
}

// shared is the env of the tests that need etcd: one cluster for the
// package, started by the first of them and stopped by TestMain.
var shared struct {
	once sync.Once
	e    *env
	eps  []string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		shared.e.close()
	}
	os.Exit(code)
}

// etcdEnv returns the shared env with its etcd cluster started. Each test
// uses keys of its own.
func etcdEnv(t *testing.T) (*env, []string) {
	t.Helper()
	shared.once.Do(func() {
		if shared.e, shared.err = newEnv(); shared.err == nil {
			shared.eps, shared.err = shared.e.etcdEndpoints()
		}
	})
	if err := shared.err; err != nil {
		if strings.HasPrefix(err.Error(), "not installed") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return shared.e, shared.eps
}
