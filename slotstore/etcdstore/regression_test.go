package etcdstore_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// A Finish whose first request went unanswered, and whose
// context ends before the request sent again is answered, may have been
// recorded: its error must say the outcome is unknown. The store reaches
// its member through a proxy that holds every request and reply for longer
// than the request timeout, so the first request lands after its timeout;
// the context ends a little after that timeout, during the wait before the
// request is sent again. The finish is recorded, and the caller must not
// be told plainly that it failed.
func TestFinishUnansweredThenContextEnds(t *testing.T) {
	m := sharedEtcd(t).Members()[0]
	proxy := testserver.StartProxy(t, strings.TrimPrefix(m.ClientURL(), "http://"))
	const reqTTL = 300 * time.Millisecond
	s := openWith(t, etcdstore.Options{Endpoints: []string{"http://" + proxy.Addr()}, RequestTimeout: reqTTL})
	direct := openWith(t, etcdstore.Options{Prefix: s.Prefix()})
	margins := []time.Duration{10 * time.Millisecond, 15 * time.Millisecond, 20 * time.Millisecond}
	var refs []slotstore.Ref
	for i := range margins {
		res := claim(t, s, "r", slotstore.ClaimRequest{Job: "unknown", Slot: nextHour().Add(time.Duration(i) * time.Minute), Lease: time.Hour})
		won(t, res)
		refs = append(refs, res[0].Claim.Ref)
	}
	proxy.Delay(reqTTL + 100*time.Millisecond)
	defer proxy.Restore()
	plain := map[slotstore.Ref]error{}
	for i, margin := range margins {
		ctx, cancel := context.WithTimeout(t.Context(), reqTTL+margin)
		err := s.Finish(ctx, slotstore.FinishParams{Ref: refs[i], Outcome: slotstore.Succeeded})
		cancel()
		if err != nil && !errors.Is(err, slotstore.ErrOutcomeUnknown) {
			plain[refs[i]] = err
		}
	}
	// Say which of them were recorded all the same, as far as can be seen
	// now (a request held by the proxy lands 400 ms after it was sent).
	ms, err := direct.History(t.Context(), slotstore.HistoryParams{Job: "unknown", Limit: len(margins)})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err, ok := plain[m.Ref()]; ok {
			t.Errorf("finish of fence %d sent, unanswered, then its context ended: %v, not ErrOutcomeUnknown; the slot is %s",
				m.Fence, err, m.State)
		}
	}
}

// watchers returns how many watches member m serves, from its metrics.
func watchers(t *testing.T, m *testserver.EtcdMember) int {
	t.Helper()
	resp, err := http.Get(m.ClientURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_debugging_mvcc_watcher_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %q: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatalf("no etcd_debugging_mvcc_watcher_total in the metrics of %s", m.Name())
	return 0
}

// A replica whose pause watch runs on a member that stops
// answering (frozen, or cut off by the network while its TCP connection
// stays up) keeps answering Pauses from its copy, with no error, while its
// requests have moved to another member and succeed: a pause set by
// another replica is not seen until gRPC's keepalive drops the silent
// connection, 13 s or more later, and meanwhile the replica claims the
// paused job's slots. The store reaches member 0 through a proxy and the
// others through proxies that refuse connections while it opens, so its
// watch runs on member 0; then member 0's proxy forwards nothing.
func TestPauseSeenWhileWatchedMemberIsSilent(t *testing.T) {
	c := testserver.StartEtcd(t, testserver.EtcdConfig{})
	ms := c.Members()
	var proxies []*testserver.Proxy
	var eps []string
	for _, m := range ms {
		p := testserver.StartProxy(t, strings.TrimPrefix(m.ClientURL(), "http://"))
		proxies = append(proxies, p)
		eps = append(eps, "http://"+p.Addr())
	}
	prefix := freshPrefix()
	other := openWith(t, etcdstore.Options{Endpoints: []string{ms[1].ClientURL(), ms[2].ClientURL()}, Prefix: prefix})
	if n := watchers(t, ms[0]); n != 0 {
		t.Fatalf("member 0 serves %d watches before the store opens", n)
	}
	proxies[1].Cut()
	proxies[2].Cut()
	s := openWith(t, etcdstore.Options{Endpoints: eps, Prefix: prefix, RequestTimeout: 300 * time.Millisecond})
	poll.Until(t, 10*time.Second, "the store's pause watch to start on member 0", func() error {
		if watchers(t, ms[0]) == 0 {
			return errors.New("member 0 serves no watch")
		}
		return nil
	})
	proxies[1].Restore()
	proxies[2].Restore()
	proxies[0].Blackhole()
	defer proxies[0].Restore()

	// The store's requests move to the other members.
	base := nextHour()
	slot := base
	poll.Until(t, 20*time.Second, "the store's claims to move off the silent member", func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{
			{Job: "warm", Slot: slot, Lease: time.Minute}}})
		slot = slot.Add(time.Second)
		return err
	})

	if err := other.SetPause(t.Context(), slotstore.PauseParams{Job: "paused", Paused: true, By: "other"}); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	for {
		p, err := s.Pauses(t.Context())
		if err == nil && slices.Contains(p.Jobs, "paused") {
			t.Logf("pause seen after %v", time.Since(set))
			return
		}
		if time.Since(set) > 3*time.Second {
			res, cerr := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{
				{Job: "paused", Slot: base, Lease: time.Minute}}})
			status := "error " + fmt.Sprint(cerr)
			if cerr == nil {
				status = res[0].Status.String()
			}
			t.Fatalf("3s after another replica paused job \"paused\", Pauses still says %+v (err %v), while a claim of its slot "+
				"through the same store answers %s", p, err, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Fences only grow, also after the store lost its data
// (DESIGN.md, guarantee 2: "use a floor such as the store's own clock so a
// counter cannot fall back"). An etcd cluster that lost every member's
// data and was replaced by a new, empty one at the same endpoints begins
// its revisions again near 1, and the store's fences are revisions: the
// first claim on the new cluster gets a fence far below those issued on
// the old one. The generation check works (the old slot is not run
// again); the fence does not.
func TestFencesGrowOnAnEmptyCluster(t *testing.T) {
	prefix := freshPrefix()
	old := openWith(t, etcdstore.Options{Prefix: prefix})
	// The old cluster has written a little: some jobs ran for a while.
	for i := range 40 {
		if err := old.SetPause(t.Context(), slotstore.PauseParams{Job: fmt.Sprint("j", i), Paused: true}); err != nil {
			t.Fatal(err)
		}
	}
	base := nextHour()
	first := claim(t, old, "r", slotstore.ClaimRequest{Job: "f", Slot: base, Lease: time.Minute})
	won(t, first)

	fresh := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	s := openWith(t, etcdstore.Options{Endpoints: fresh.Endpoints(), Prefix: prefix})
	if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"f"}}); err != nil {
		t.Fatal(err)
	}
	next := claim(t, s, "r", slotstore.ClaimRequest{Job: "f", Slot: base.Add(time.Minute), Lease: time.Minute})
	won(t, next)
	if next[0].Claim.Fence <= first[0].Claim.Fence {
		t.Errorf("after the cluster was replaced by an empty one, the next claim of the job got fence %d, below fence %d "+
			"issued before", next[0].Claim.Fence, first[0].Claim.Fence)
	}
}

// Host:port endpoints are read over HTTP; a private CA is
// New's documented limit, its error naming the way out. New takes a
// client configured by the caller, but measures the
// members' clock with an HTTP client of its own built from the client's
// endpoints and no TLS settings: a client whose endpoints are written
// host:port, as etcd's own examples write them, or that reaches the
// members over TLS signed by a private CA, gets no store unless the caller
// knows to set a clock.
func TestNewWithTheCallersClient(t *testing.T) {
	t.Run("endpoints without a scheme", func(t *testing.T) {
		var eps []string
		for _, e := range sharedEtcd(t).Endpoints() {
			eps = append(eps, strings.TrimPrefix(e, "http://"))
		}
		cl, err := clientv3.New(clientv3.Config{Endpoints: eps, DialKeepAliveTime: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := cl.Get(t.Context(), "x"); err != nil {
			t.Fatalf("the client of %v does not work: %v", eps, err)
		}
		s, err := etcdstore.New(t.Context(), cl, etcdstore.Options{Prefix: freshPrefix()})
		if err != nil {
			t.Fatalf("New with a working client of %v: %v", eps, err)
		}
		defer s.Close()
		won(t, claim(t, s, "r", slotstore.ClaimRequest{Job: "new", Slot: nextHour(), Lease: time.Minute}))
	})
	t.Run("TLS with a private CA", func(t *testing.T) {
		ca := newPKI(t)
		serverCert, serverKey := ca.issue("server", 2)
		clientCert, clientKey := ca.issue("client", 3)
		c := testserver.StartEtcd(t, testserver.EtcdConfig{
			Members: 1, CertFile: serverCert, KeyFile: serverKey, TrustedCAFile: ca.CA, ClientCertAuth: true,
		})
		cert, err := tls.LoadX509KeyPair(clientCert, clientKey)
		if err != nil {
			t.Fatal(err)
		}
		tc := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
		tc.RootCAs.AddCert(ca.cert)
		cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), TLS: tc, DialKeepAliveTime: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := cl.Get(t.Context(), "x"); err != nil {
			t.Fatalf("the TLS client does not work: %v", err)
		}
		// The members' clock is read with the system's roots, which do
		// not know this CA: New says so and names the way out.
		_, err = etcdstore.New(t.Context(), cl, etcdstore.Options{Prefix: freshPrefix()})
		if err == nil || !strings.Contains(err.Error(), "clock: local") {
			t.Fatalf("New with a TLS client of a private CA, members' clock: %v, want an error naming clock: local", err)
		}
		s, err := etcdstore.New(t.Context(), cl, etcdstore.Options{Prefix: freshPrefix(), ClockSource: etcdstore.ClockLocal})
		if err != nil {
			t.Fatalf("New with a working TLS client: %v", err)
		}
		defer s.Close()
		won(t, claim(t, s, "r", slotstore.ClaimRequest{Job: "new", Slot: nextHour(), Lease: time.Minute}))
	})
}

// A claim in flight when its store closes may have been
// recorded, and its error must say the outcome is unknown, not only that
// the store closed. The store reaches its member through a proxy that
// holds every request and every reply 300 ms; the store closes once etcd
// recorded the claim, while its reply is held.
func TestClaimInFlightAtClose(t *testing.T) {
	m := sharedEtcd(t).Members()[0]
	proxy := testserver.StartProxy(t, strings.TrimPrefix(m.ClientURL(), "http://"))
	s, err := etcdstore.Open(t.Context(), etcdstore.Options{Endpoints: []string{"http://" + proxy.Addr()}, Prefix: freshPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	direct := openWith(t, etcdstore.Options{Prefix: s.Prefix()})
	slot := nextHour().Add(time.Minute) // and the slot before it: both after the job's generation begins
	won(t, claim(t, s, "r", slotstore.ClaimRequest{Job: "close", Slot: slot.Add(-time.Minute), Lease: time.Minute}))
	proxy.Delay(300 * time.Millisecond)
	defer proxy.Restore()
	errc := make(chan error, 1)
	go func() {
		_, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{
			{Job: "close", Slot: slot, Lease: time.Minute}}})
		errc <- err
	}()
	poll.Until(t, 10*time.Second, "etcd to record the claim in flight", func() error {
		ms, err := direct.History(t.Context(), slotstore.HistoryParams{Job: "close"})
		if err == nil && !slices.ContainsFunc(ms, func(m slotstore.Marker) bool { return m.Slot.Equal(slot) }) {
			return errors.New("no marker of its slot")
		}
		return err
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Its reply was held: answered at all, the answer is the claim's, or
	// unknown.
	if err = <-errc; err != nil && !errors.Is(err, slotstore.ErrOutcomeUnknown) {
		t.Fatalf("a claim in flight at Close answered %v (ErrClosed %v, not ErrOutcomeUnknown), yet etcd recorded it",
			err, errors.Is(err, slotstore.ErrClosed))
	}
}

// Close leaves goroutines behind: the HTTP connection that
// measured the members' clock stays open, idle, for the transport's idle
// timeout (90 s), with its read and write loops. (The package's TestMain
// does not see them, because it stops the cluster, which closes them,
// before it looks.) The store reaches its member through a proxy of its
// own, so no other store of the process measured that clock before.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	m := sharedEtcd(t).Members()[0]
	proxy := testserver.StartProxy(t, strings.TrimPrefix(m.ClientURL(), "http://"))
	before := goleak.IgnoreCurrent()
	s, err := etcdstore.Open(t.Context(), etcdstore.Options{Endpoints: []string{"http://" + proxy.Addr()}, Prefix: freshPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("after Close: %v", err)
	}
}

// An unknown outcome where the store cannot tell: a Release whose first request lands but whose reply is lost,
// and whose slot another replica claims (a released slot is won at once)
// before the release is sent again, answers ErrLeaseLost, whose contract is
// "nothing was changed": the resend reads the new claim and no longer
// recognises its own release. The store reaches member 0 through a proxy
// that holds every request and every reply 600 ms, so a request lands
// after 600 ms and its reply would come after 1.2 s, past the 1 s request
// timeout; the resend goes to member 1. Another replica claims the slot as
// soon as it is released.
func TestReleaseLandedThenReclaimed(t *testing.T) {
	c := sharedEtcd(t)
	m0, m1 := c.Members()[0], c.Members()[1]
	proxy := testserver.StartProxy(t, strings.TrimPrefix(m0.ClientURL(), "http://"))
	s := openWith(t, etcdstore.Options{Endpoints: []string{"http://" + proxy.Addr(), m1.ClientURL()}})
	other := openWith(t, etcdstore.Options{Prefix: s.Prefix()})
	r := slotstore.ClaimRequest{Job: "release", Slot: nextHour(), Lease: time.Hour}
	res := claim(t, s, "r", r)
	won(t, res)
	ref := res[0].Claim.Ref

	proxy.Delay(600 * time.Millisecond)
	defer proxy.Restore()
	reclaimed := make(chan slotstore.ClaimResult, 1)
	stop := make(chan struct{})
	go func() {
		defer close(reclaimed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, err := other.Claim(t.Context(), slotstore.ClaimParams{Replica: "other", Requests: []slotstore.ClaimRequest{r}})
			if err == nil && out[0].Status == slotstore.Won {
				reclaimed <- out[0]
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	err := s.Release(ctx, ref)
	cancel()
	close(stop)
	got, ok := <-reclaimed
	if err == nil {
		return
	}
	if ok && got.Claim.PrevHolder == "r" && got.Claim.Attempt == 2 && !errors.Is(err, slotstore.ErrOutcomeUnknown) {
		t.Errorf("release of fence %d: %v; yet it was recorded: the slot was released and then claimed by %s (attempt %d, "+
			"previous holder %s)", ref.Fence, err, got.Marker.Holder, got.Claim.Attempt, got.Claim.PrevHolder)
	} else if !errors.Is(err, slotstore.ErrOutcomeUnknown) {
		t.Errorf("release of fence %d: %v", ref.Fence, err)
	}
}
