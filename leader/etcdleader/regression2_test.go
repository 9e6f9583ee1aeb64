package etcdleader_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// A Txn a member forwarded to etcd's leader just as it died
// is answered only when the member's request times out (5 s plus two
// election timeouts: 6 s here), and the elector sends it elsewhere only
// after a quarter of the lease (3.75 s for the scheduler's default 15 s
// lease, 7.5 s for 30 s). So a release sent as etcd's leader dies reaches
// the waiting followers seconds after a new leader was elected (in well
// under a second here), though package leader promises a hand-over within
// a round trip or two; a renewal or Acquire caught the same way waits as
// long. The etcd store bounds each request by its request_timeout (1 s)
// for this reason; the elector has no such bound.
func TestReleaseAsEtcdsLeaderDiesIsSentAgainSoon(t *testing.T) {
	c := cluster(t)
	l := c.Leader()
	if l == nil {
		t.Fatal("the cluster has no leader")
	}
	var others []*testserver.EtcdMember
	for _, m := range c.Members() {
		if m != l {
			others = append(others, m)
		}
	}
	// A leads through a follower of etcd's leader; B follows through the
	// other follower and the leader.
	prefix := newPrefix()
	ea := elector(t, newClient(t, others[0].ClientURL()), etcdleader.Options{Prefix: prefix, Logger: quiet})
	var bLogs testlog.Buffer
	eb := elector(t, newClient(t, l.ClientURL(), others[1].ClientURL()), etcdleader.Options{Prefix: prefix,
		Logger: slog.New(slog.NewJSONHandler(&bLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	const lease = 15 * time.Second // the scheduler's default
	release := make(chan struct{})
	aTerms := make(chan leader.Term, 1)
	actx, acancel := context.WithCancel(t.Context())
	adone := make(chan struct{})
	go func() {
		defer close(adone)
		ea.Lead(actx, leader.Params{Name: "fanout", Replica: "A", Lease: lease}, func(ctx context.Context, term leader.Term) {
			aTerms <- term
			select {
			case <-release:
			case <-ctx.Done():
			}
			acancel() // resigns and releases, then Lead returns
		})
	}()
	defer func() { acancel(); <-adone }()
	first := receive(t, aTerms, 10*time.Second, "A's term")
	bTerms, _, _ := campaign(t, eb, leader.Params{Name: "fanout", Replica: "B", Lease: lease})
	poll.Until(t, 10*time.Second, "B to find A's term and wait for its lease", func() error {
		if len(bLogs.Logged(t, "waiting for the lease")) == 0 {
			return errors.New("B logged no wait")
		}
		return nil
	})

	l.Kill()
	t.Cleanup(func() { _ = l.Restart() })
	killed := time.Now()
	close(release)
	for c.Leader() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	elected := time.Since(killed)
	next := receive(t, bTerms, lease, "B's term after A's release")
	took := time.Since(killed)
	t.Logf("etcd's leader %s killed as A released: a new leader after %v, B's term (fence %d > %d) after %v",
		l.Name(), elected.Round(time.Millisecond), next.Fence, first.Fence, took.Round(time.Millisecond))
	if bound := elected + 2*time.Second; took > bound {
		t.Errorf("the hand-over took %v, more than 2s past the election of etcd's next leader (%v)",
			took.Round(time.Millisecond), elected.Round(time.Millisecond))
	}
	if err := l.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Open calls the client's Watch, which in clientv3 does not
// return until the member has created the watch or the watch's context
// ends; that context derives from context.Background(), not from Open's
// ctx, so the select on ctx after it never runs. A member that accepts a
// connection and answers nothing (a blackhole, a frozen member the
// client's round robin gave the new watch stream to) holds Open, and with
// it Lead, past its context: the driver bounds Open by one lease and Lead
// promises to give a store call up to one lease after its ctx ends.
// Here Lead, its ctx ended after 1 s with a 500 ms lease, has still not
// returned 5 s later; on a 3-member cluster with one member frozen the
// same happens whenever a session's watch lands on it, until gRPC's
// keepalive drops the connection (10 s or more), or never without one.
func TestLeadEndsWithItsContextInOpen(t *testing.T) {
	c := cluster(t)
	p := testserver.StartProxy(t, strings.TrimPrefix(c.Members()[0].ClientURL(), "http://"))
	e := elector(t, newClient(t, p.Addr()), etcdleader.Options{Prefix: newPrefix(), Logger: quiet})
	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Lead(ctx, leader.Params{Name: "fanout", Replica: "A", Lease: 500 * time.Millisecond}, func(context.Context, leader.Term) {})
	}()
	select {
	case <-done:
	case <-time.After(6 * time.Second):
		t.Errorf("Lead has not returned 5s after its ctx ended (lease 500ms)")
		p.Restore() // so that it returns now, and the test leaves nothing behind
		<-done
	}
}
