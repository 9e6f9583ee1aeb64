package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/testserver"
)

// etcdArgs are the flags every member of the private cluster gets after
// testserver's: no fsync, as postgres runs with fsync off and redis-server
// without persistence, so the figures are the software's, not the disk's;
// and etcd's default heartbeat and election timeout in place of the
// shorter ones testserver sets for fast fail-over in tests, so a loaded
// machine does not hold more elections than a deployment would.
var etcdArgs = []string{"--unsafe-no-fsync", "--heartbeat-interval", "100", "--election-timeout", "1000"}

// etcdEndpoints starts the private 3-member etcd cluster on first use and
// returns its client URLs.
func (e *env) etcdEndpoints() ([]string, error) {
	if e.etcd == nil && e.etcdErr == nil {
		e.etcdErr = try(func() { e.etcd = testserver.StartEtcd(e.t, testserver.EtcdConfig{Args: etcdArgs}) })
		if e.etcdErr == nil {
			e.etcdc, e.etcdErr = clientv3.New(clientv3.Config{Endpoints: e.etcd.Endpoints(), DialTimeout: 10 * time.Second})
		}
	}
	if e.etcdErr != nil {
		return nil, e.etcdErr
	}
	return e.etcd.Endpoints(), nil
}

// etcdDrop deletes every key under prefix, which one measurement wrote,
// and compacts the cluster's history up to the deletion, so a long run
// stays far below etcd's backend quota. It runs between measurements.
func (e *env) etcdDrop(prefix string) {
	if e.etcdc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := e.etcdc.Delete(ctx, prefix, clientv3.WithPrefix())
	if err == nil {
		_, err = e.etcdc.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
		if errors.Is(err, rpctypes.ErrCompacted) { // nothing written since the last compaction
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "slotbench: etcd: delete and compact %s: %v\n", prefix, err)
	}
}

// etcdCounts is what one reading of the members' /metrics gives.
type etcdCounts struct {
	// requests is grpc_server_msg_received_total summed over every
	// method and member: each unary call, and each message a client sends
	// on a stream (a lease keep-alive, a watch created or cancelled).
	requests int64
	txn      int64 // etcdserverpb.KV Txn
	rng      int64 // etcdserverpb.KV Range
	put      int64 // etcdserverpb.KV Put and DeleteRange
	lease    int64 // etcdserverpb.Lease, keep-alive messages included
	watch    int64 // etcdserverpb.Watch stream messages
	// proposals is etcd_server_proposals_committed_total of the member
	// that committed most: the writes raft agreed on (every member
	// commits the same entries).
	proposals int64
	// leaderChanges is etcd_server_leader_changes_seen_total of the
	// member that saw most.
	leaderChanges int64
}

func (c etcdCounts) minus(d etcdCounts) etcdCounts {
	return etcdCounts{
		requests: c.requests - d.requests, txn: c.txn - d.txn, rng: c.rng - d.rng, put: c.put - d.put,
		lease: c.lease - d.lease, watch: c.watch - d.watch, proposals: c.proposals - d.proposals,
		leaderChanges: c.leaderChanges - d.leaderChanges,
	}
}

func (c etcdCounts) plus(d etcdCounts) etcdCounts {
	return etcdCounts{
		requests: c.requests + d.requests, txn: c.txn + d.txn, rng: c.rng + d.rng, put: c.put + d.put,
		lease: c.lease + d.lease, watch: c.watch + d.watch, proposals: c.proposals + d.proposals,
		leaderChanges: c.leaderChanges + d.leaderChanges,
	}
}

// etcdRequests reads /metrics of every member. The reading is plain HTTP,
// not gRPC, so it does not count itself.
func (e *env) etcdRequests(ctx context.Context) (etcdCounts, error) {
	var total etcdCounts
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, m := range e.etcd.Members() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL()+"/metrics", nil)
		if err != nil {
			return total, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return total, fmt.Errorf("etcd member %s: /metrics: %w", m.Name(), err)
		}
		c, err := parseEtcdMetrics(resp.Body)
		resp.Body.Close()
		if err != nil {
			return total, fmt.Errorf("etcd member %s: /metrics: %w", m.Name(), err)
		}
		proposals, changes := max(total.proposals, c.proposals), max(total.leaderChanges, c.leaderChanges)
		total = total.plus(c)
		total.proposals, total.leaderChanges = proposals, changes
	}
	return total, nil
}

// parseEtcdMetrics reads the counters etcdCounts holds from one member's
// Prometheus text exposition.
func parseEtcdMetrics(r io.Reader) (etcdCounts, error) {
	var c etcdCounts
	seen := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := metricLine(line)
		if err != nil {
			return c, err
		}
		switch name {
		case "etcd_server_proposals_committed_total":
			c.proposals = int64(value)
		case "etcd_server_leader_changes_seen_total":
			c.leaderChanges = int64(value)
		case "grpc_server_msg_received_total":
			seen = true
			n := int64(value)
			c.requests += n
			switch service, method := labels["grpc_service"], labels["grpc_method"]; {
			case service == "etcdserverpb.KV" && method == "Txn":
				c.txn += n
			case service == "etcdserverpb.KV" && method == "Range":
				c.rng += n
			case service == "etcdserverpb.KV" && (method == "Put" || method == "DeleteRange"):
				c.put += n
			case service == "etcdserverpb.Lease":
				c.lease += n
			case service == "etcdserverpb.Watch":
				c.watch += n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if !seen {
		return c, errors.New("no grpc_server_msg_received_total")
	}
	return c, nil
}

// metricLine splits a sample line, name{k="v",...} value, of the
// Prometheus text format. Label values of etcd's metrics hold no escaped
// quotes or commas.
func metricLine(line string) (name string, labels map[string]string, value float64, err error) {
	rest := line
	if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
		name = line[:i]
		end := strings.IndexByte(line, '}')
		if end < i {
			return "", nil, 0, fmt.Errorf("sample %q: no closing brace", line)
		}
		labels = map[string]string{}
		for kv := range strings.SplitSeq(line[i+1:end], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			labels[k] = strings.Trim(v, `"`)
		}
		rest = line[end+1:]
	} else {
		name, rest, _ = strings.Cut(line, " ")
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, 0, fmt.Errorf("sample %q: no value", line)
	}
	value, err = strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("sample %q: value: %w", line, err)
	}
	return name, labels, value, nil
}

// etcdVersion is the server version the first member reports on /version.
func (e *env) etcdVersion() string {
	if e.etcd == nil || e.etcdErr != nil {
		return ""
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(e.etcd.Endpoints()[0] + "/version")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct {
		Server string `json:"etcdserver"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil || v.Server == "" {
		return ""
	}
	return fmt.Sprintf("etcd %s (%d members)", v.Server, len(e.etcd.Members()))
}

// etcdTxnName names the etcd baseline of the arbitration section.
const etcdTxnName = "etcd Txn CreateRevision = 0 → Put"

// etcdTxnKeys is how many keys one baseline transaction decides: etcd's
// default --max-txn-ops (128) bounds its compares and its puts alike.
const etcdTxnKeys = 128

// etcdTxn lets o.ArbClients clients, each with its own etcd client,
// decide the same batches of o.ArbBatch fresh keys for o.ArbDuration: a
// transaction per etcdTxnKeys keys of a batch, comparing each key's
// CreateRevision with 0 (it does not exist) and putting a marker naming
// the client in each. A transaction wins all its keys or none. It counts
// the keys won, and checks that each was won exactly once.
func (e *env) etcdTxn(ctx context.Context, o *Options) (a arbitration) {
	a = arbitration{name: etcdTxnName, checked: true, loadB: loadAvg()}
	defer func() { a.loadA = loadAvg() }()
	eps, err := e.etcdEndpoints()
	if err != nil {
		a.err = err
		return a
	}
	e.seq++
	prefix := fmt.Sprintf("st%d_%d/", time.Now().Unix()%100000, e.seq)
	defer e.etcdDrop(prefix)
	clients := make([]*clientv3.Client, o.ArbClients)
	for i := range clients {
		if clients[i], err = clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second}); err != nil {
			a.err = err
			return a
		}
		defer clients[i].Close()
	}
	wins := make([][]int, len(clients))
	errs := make([]error, len(clients))
	start := time.Now()
	deadline := start.Add(o.ArbDuration)
	var wg sync.WaitGroup
	for c, cl := range clients {
		wg.Go(func() {
			marker := fmt.Sprintf(`{"state":"running","holder":"r%d"}`, c+1)
			for b := 0; time.Now().Before(deadline); b++ {
				won := 0
				for lo := 0; lo < o.ArbBatch; lo += etcdTxnKeys {
					hi := min(lo+etcdTxnKeys, o.ArbBatch)
					cmps := make([]clientv3.Cmp, 0, hi-lo)
					puts := make([]clientv3.Op, 0, hi-lo)
					for j := lo; j < hi; j++ {
						k := fmt.Sprintf("%sm/a%06d/%08d", prefix, j, b)
						cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
						puts = append(puts, clientv3.OpPut(k, marker))
					}
					resp, err := cl.Txn(ctx).If(cmps...).Then(puts...).Commit()
					if err != nil {
						errs[c] = fmt.Errorf("txn: %w", err)
						return
					}
					if resp.Succeeded {
						won += hi - lo
					}
				}
				wins[c] = append(wins[c], won)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		a.err = err
		return a
	}
	a.decided, a.bad = tally(wins, o.ArbBatch)
	a.perSec = float64(a.decided) / elapsed.Seconds()
	return a
}
