package etcdleader_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// ended is a term and why its context was cancelled.
type ended struct {
	term  leader.Term
	cause error
}

// campaign runs e.Lead(p) until the test ends, reporting each term when it
// begins and when it ends.
func campaign(t *testing.T, e leader.Elector, p leader.Params) (terms <-chan leader.Term, ends <-chan ended, stop func()) {
	tc, ec := make(chan leader.Term, 16), make(chan ended, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.Lead(ctx, p, func(ctx context.Context, term leader.Term) {
			tc <- term
			<-ctx.Done()
			ec <- ended{term, context.Cause(ctx)}
		})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Lead: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Lead did not return within 30s of its context ending")
		}
	}
	t.Cleanup(stop)
	return tc, ec, stop
}

func receive[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("no %s within %v", what, timeout)
	}
	var zero T
	return zero
}

// holderLease returns the etcd lease the holder key of name hangs on.
func holderLease(t *testing.T, c *clientv3.Client, prefix, name string) clientv3.LeaseID {
	t.Helper()
	resp, err := c.Get(t.Context(), prefix+"leader-holder/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read the holder key: %v, %d keys", err, len(resp.Kvs))
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// When etcd drops the process's etcd lease (revoked here, as an expiry
// would), the holder key goes with it and the term ends at its next
// renewal with ErrLeaseLost, though its own lease has time left; the
// campaign goes on under a new etcd lease, with a higher fence.
func TestSessionLeaseRevoked(t *testing.T) {
	c := cluster(t)
	prefix := newPrefix()
	admin := newClient(t, c.Endpoints()...)
	e := elector(t, newClient(t, c.Endpoints()...), etcdleader.Options{Prefix: prefix, Logger: quiet})
	terms, ends, _ := campaign(t, e, leader.Params{Name: "fanout", Replica: "A", Lease: 3 * time.Second})
	first := receive(t, terms, 10*time.Second, "term")
	id := holderLease(t, admin, prefix, "fanout")
	if _, err := admin.Revoke(t.Context(), id); err != nil {
		t.Fatalf("revoke the etcd lease: %v", err)
	}
	end := receive(t, ends, 10*time.Second, "end of the term")
	if !errors.Is(end.cause, leader.ErrLeaseLost) {
		t.Errorf("the term ended with %v, want ErrLeaseLost", end.cause)
	}
	next := receive(t, terms, 10*time.Second, "second term")
	if next.Fence <= first.Fence {
		t.Errorf("the second term's fence %d is not above %d", next.Fence, first.Fence)
	}
	if again := holderLease(t, admin, prefix, "fanout"); again == id {
		t.Errorf("the second term's holder key hangs on the revoked etcd lease %x", int64(id))
	}
}

// A leader cut off from etcd for longer than its SessionTTL ends its term
// with ErrLeaseLost when the client gives up on its etcd lease, before the
// term's own trust window would have ended it with ErrNotRenewed.
func TestCutOffBeyondSessionTTL(t *testing.T) {
	c := cluster(t)
	p := testserver.StartProxy(t, strings.TrimPrefix(c.Members()[0].ClientURL(), "http://"))
	e := elector(t, newClient(t, p.Addr()), etcdleader.Options{Prefix: newPrefix(), SessionTTL: 2 * time.Second, Logger: quiet})
	const lease = 10 * time.Second
	terms, ends, stop := campaign(t, e, leader.Params{Name: "fanout", Replica: "A", Lease: lease})
	receive(t, terms, 10*time.Second, "term")
	p.Blackhole()
	end := receive(t, ends, lease, "end of the term")
	if !errors.Is(end.cause, leader.ErrLeaseLost) {
		t.Errorf("the term ended with %v, want ErrLeaseLost from the lost etcd lease", end.cause)
	}
	p.Restore() // so the release gets through and Lead returns soon
	stop()
}
