package etcdstore_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// rpcCounter counts the unary requests a client sends, by method.
type rpcCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *rpcCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.mu.Lock()
	c.n[method[strings.LastIndexByte(method, '/')+1:]]++
	c.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

// count returns the requests op sent, as "Range:1 Txn:2".
func (c *rpcCounter) count(op func()) string {
	c.mu.Lock()
	c.n = map[string]int{}
	c.mu.Unlock()
	op()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for m, n := range c.n {
		out = append(out, fmt.Sprintf("%s:%d", m, n))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// countedStore returns a store on the shared cluster, under prefix, whose
// client counts its requests.
func countedStore(t *testing.T, prefix string) (*etcdstore.Store, *rpcCounter) {
	t.Helper()
	rc := &rpcCounter{n: map[string]int{}}
	cl, err := clientv3.New(clientv3.Config{
		Endpoints: sharedEtcd(t).Endpoints(), DialKeepAliveTime: 10 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(rc.intercept)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	s, err := etcdstore.New(t.Context(), cl, etcdstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// The store reads the pauses once, in the background, as it opens:
	// wait until its copy is loaded, when Pauses sends nothing.
	poll.Until(t, 10*time.Second, "the store's copy of the pauses to load", func() error {
		if got := rc.count(func() {
			if _, err := s.Pauses(t.Context()); err != nil {
				t.Fatal(err)
			}
		}); got != "" {
			return fmt.Errorf("Pauses sends %s", got)
		}
		return nil
	})
	return s, rc
}

// TestRoundTrips: the requests each operation sends. A claim of a slot
// nobody claimed, of a job the store enrolled, is one transaction; so is
// a losing claim (its compares fail, and its Else reads what it lost to); a renewal and a finish of a slot the store holds,
// one each; a batch of new slots, one read and one transaction per slot of
// its most claimed job; Pauses, none once the watched copy holds the
// store's own last pause.
func TestRoundTrips(t *testing.T) {
	prefix := freshPrefix()
	s, rc := countedStore(t, prefix)
	other, orc := countedStore(t, prefix)
	ctx := t.Context()
	if _, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	base := nextHour()
	r := slotstore.ClaimRequest{Job: "a", Slot: base, Lease: time.Minute}
	var res []slotstore.ClaimResult
	if got := rc.count(func() { res = claim(t, s, "r1", r) }); got != "Txn:1" {
		t.Errorf("claim of a new slot: %s, want Txn:1", got)
	}
	won(t, res)
	ref := res[0].Claim.Ref
	if got := orc.count(func() { claim(t, other, "r2", r) }); got != "Txn:1" {
		t.Errorf("claim of a held slot: %s, want Txn:1 (whose compares fail, and whose Else reads the marker)", got)
	}
	// The store that holds it checks what it remembers.
	if got := rc.count(func() { claim(t, s, "r1", r) }); got != "Txn:1" {
		t.Errorf("claim of a slot the store holds: %s, want Txn:1", got)
	}
	if got := rc.count(func() {
		if err := s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}); got != "Txn:1" {
		t.Errorf("renew: %s, want Txn:1", got)
	}
	if got := rc.count(func() {
		if err := s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}); err != nil {
			t.Fatal(err)
		}
	}); got != "Txn:1" {
		t.Errorf("finish: %s, want Txn:1", got)
	}
	var reqs []slotstore.ClaimRequest
	for i := range 5 {
		for _, j := range []string{"a", "b"} {
			reqs = append(reqs, slotstore.ClaimRequest{Job: j, Slot: base.Add(time.Duration(i+1) * time.Second), Lease: time.Minute})
		}
	}
	if got := rc.count(func() { won(t, claim(t, s, "r1", reqs...)) }); got != "Txn:6" {
		t.Errorf("batch of 5 new slots of each of 2 jobs: %s, want Txn:6 (a read, then 5)", got)
	}
	if res := claim(t, other, "r2", r); res[0].Status != slotstore.Finished {
		t.Errorf("claim by another store of the finished slot: %v", res[0].Status)
	}

	if err := s.SetPause(ctx, slotstore.PauseParams{Job: "a", Paused: true}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "Pauses to send nothing after the pause", func() error {
		var p slotstore.Pauses
		got := rc.count(func() {
			var err error
			if p, err = s.Pauses(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if len(p.Jobs) != 1 {
			t.Fatalf("pauses right after a pause: %+v", p)
		}
		if got != "" {
			return fmt.Errorf("Pauses sends %s", got)
		}
		return nil
	})
}
