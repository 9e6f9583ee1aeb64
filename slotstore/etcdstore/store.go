package etcdstore

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/slotcron/slotcron/internal/netclock"
	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.Store = (*Store)(nil)

// Keepalive of the client's connections: a member that stops answering
// (a frozen process, a host gone) is dropped after keepaliveTime idle plus
// keepaliveTimeout, and calls go to the others. etcd refuses pings more
// often than every 5 s (its --grpc-keepalive-min-time), and gRPC raises
// any keepalive time below 10 s to 10 s: a frozen member is dropped after
// 13 s at the soonest, which is why requests go to one member at a time
// and move on from one that does not answer (members.go).
const (
	keepaliveTime    = 6 * time.Second
	keepaliveTimeout = 3 * time.Second
)

// Store is a slotstore.Store kept in etcd. It is safe for concurrent use by
// many goroutines, and any number of Stores, in any number of processes,
// may share one cluster and prefix. Its zero value is not usable; call Open
// or New.
type Store struct {
	client *clientv3.Client
	// members, when the store made its client for several endpoints, sends
	// its requests to one member at a time (members.go); nil otherwise.
	members *members
	owned   bool // Close closes client and members
	k       keys
	now     func() time.Time
	reqTTL  time.Duration // Options.RequestTimeout
	maxOps  int
	ttl     time.Duration // of the process lease
	// fenceBase is added to a revision to make a fence (clusterValue),
	// read from the prefix's cluster record, whose CreateRevision is
	// clusterRev: every claim transaction compares it, so a record written
	// anew (the prefix's keys deleted, the cluster replaced) is seen before
	// a fence is issued on the old base. lastRev is the highest revision
	// the store has seen.
	fenceBase  atomic.Int64
	clusterRev atomic.Int64
	lastRev    atomic.Int64

	lease   atomic.Int64 // the process lease, a clientv3.LeaseID
	leaseMu sync.Mutex   // serialises grants of a new lease

	cache  cache      // keys whose values rarely change
	pauses pauseCache // kept by a watch
	group  group      // fenced mutations waiting to go together
	bg     context.Context
	stop   context.CancelFunc // ends bg, and with it every goroutine below
	// mu orders the start of a goroutine (workers.Add) before Close's wait
	// for them, which sets closed first.
	mu      sync.Mutex
	closed  atomic.Bool
	workers sync.WaitGroup // the lease keeper, the pause watcher, holder watches
}

// Open connects to the cluster o describes, checks that it answers, grants
// the process's lease and keeps it alive. Options that Validate refuses are
// an error wrapping slotstore.ErrInvalid and Validate's error. Errors name
// the endpoints, never the password.
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("etcdstore: options: %w: %w", slotstore.ErrInvalid, err)
	}
	o = o.withDefaults()
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	where := strings.Join(o.Endpoints, ",")
	cfg := clientv3.Config{
		Endpoints:            o.Endpoints,
		DialTimeout:          o.DialTimeout,
		DialKeepAliveTime:    keepaliveTime,
		DialKeepAliveTimeout: keepaliveTimeout,
		TLS:                  tc,
		Username:             o.Username,
		Password:             o.Password,
		Logger:               zap.NewNop(),
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect to %s: %w", where, err)
	}
	ms, err := newMembers(cfg)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("etcdstore: connect to %s: %w", where, err)
	}
	s, err := open(ctx, c, o, where, tc, ms)
	if err != nil {
		c.Close()
		if ms != nil {
			ms.close()
		}
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a store that uses c, a client configured by the caller, with
// the settings of o that are not about connecting (Prefix, RequestTimeout,
// LeaseTTL, MaxTxnOps, Clock); o's connection settings must be empty. Like
// Open it checks that the cluster answers and grants the process's lease.
// Close leaves c open. Give c a DialKeepAliveTime, so a member that stops
// answering is dropped; the store bounds each request itself. The members'
// clock (ClockSource etcd) is read at c's endpoints over plain HTTP, or
// HTTPS with the system's roots for https:// endpoints: for members whose
// certificates another CA signed, or that want a client certificate, give
// o.Clock or ClockSource local, or use Open. Requests all go through c's
// own balancing (Open's route to one member at a time).
func New(ctx context.Context, c *clientv3.Client, o Options) (*Store, error) {
	if c == nil {
		return nil, fmt.Errorf("etcdstore: %w: nil client", slotstore.ErrInvalid)
	}
	var conn []string
	if len(o.Endpoints) > 0 {
		conn = append(conn, "endpoints")
	}
	if o.Username != "" || o.Password != "" {
		conn = append(conn, "username and password")
	}
	if o.TLS.set() {
		conn = append(conn, "tls")
	}
	if o.DialTimeout != 0 {
		conn = append(conn, "dial_timeout")
	}
	if len(conn) > 0 {
		return nil, fmt.Errorf("etcdstore: options: %w: %s given, but New uses the client it is given", slotstore.ErrInvalid,
			strings.Join(conn, ", "))
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("etcdstore: options: %w: %w", slotstore.ErrInvalid, err)
	}
	o = o.withDefaults()
	return open(ctx, c, o, strings.Join(c.Endpoints(), ","), nil, nil)
}

// open checks that the cluster answers, checks the prefix's cluster record
// (cluster.go), measures the members' clock unless o has one, grants the
// process lease and starts the store's goroutines. tc is the TLS of the
// members' client URLs, nil for the system's defaults.
func open(ctx context.Context, c *clientv3.Client, o Options, where string, tc *tls.Config, ms *members) (*Store, error) {
	s := &Store{
		client: c, members: ms, k: keys{prefix: o.Prefix}, now: o.Clock, reqTTL: o.RequestTimeout,
		maxOps: o.MaxTxnOps, ttl: o.LeaseTTL,
	}
	s.cache.init()
	s.pauses.init()
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	var clock *netclock.Clock
	if s.now == nil {
		var err error
		tlsKey := fmt.Sprint(tc != nil, o.TLS)
		if clock, err = membersClock(ctx, c.Endpoints(), tc, tlsKey, max(o.DialTimeout, clockPatience)); err != nil {
			return nil, fmt.Errorf("etcdstore: %w (set clock: local to use this process's clock instead)", err)
		}
		s.now = clock.Now
	}
	if err := s.checkCluster(dctx); err != nil {
		return nil, fmt.Errorf("etcdstore: connect to %s: %w", where, err)
	}
	id, err := s.grant(dctx)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: grant the process lease on %s: %w", where, err)
	}
	s.lease.Store(int64(id))
	s.bg, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	s.start(s.keepLease)
	s.start(s.watchPauses)
	if clock != nil {
		s.start(func() { clock.Run(s.bg) })
	}
	return s, nil
}

// clockPatience bounds the first measurement of the members' clock: about
// a second of probes, on a slow network a few.
const clockPatience = 5 * time.Second

// clocks are the members' clocks measured by this process, by endpoints
// and TLS settings: the stores of one process on one cluster share one
// measurement, made again by any of them when it grows old.
var clocks = struct {
	sync.Mutex
	m map[string]*netclock.Clock
}{m: map[string]*netclock.Clock{}}

// membersClock measures the clock of the members at endpoints, through
// the Date header of their /version answers, or returns the measurement
// another store of the process made within netclock.DefaultResync.
func membersClock(ctx context.Context, endpoints []string, tc *tls.Config, tlsKey string, patience time.Duration) (*netclock.Clock, error) {
	urls := make([]string, len(endpoints))
	for i, e := range endpoints {
		if !strings.Contains(e, "://") {
			// host:port, as etcd's client takes it too: plain HTTP
			// unless the members serve TLS.
			scheme := "http://"
			if tc != nil {
				scheme = "https://"
			}
			e = scheme + e
		}
		urls[i] = strings.TrimSuffix(e, "/") + "/version"
	}
	key := strings.Join(urls, ",") + "|" + tlsKey
	clocks.Lock()
	defer clocks.Unlock()
	if c := clocks.m[key]; c != nil {
		if age, ok := c.Age(); ok && age < netclock.DefaultResync {
			return c, nil
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	clock, err := netclock.New(netclock.Options{URLs: urls, Client: &http.Client{Transport: tr, Timeout: time.Second}})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := clock.Sync(sctx); err != nil {
		return nil, fmt.Errorf("read the members' clock: %w", err)
	}
	clocks.m[key] = clock
	return clock, nil
}

// FenceBase is what the store adds to a revision to make a fence: its
// clock in microseconds when the prefix's keys began in this cluster. An
// elector sharing the prefix adds it to its terms' revisions
// (etcdleader.Options.FenceBase), so their fences too stay above those of
// a cluster this one replaced.
func (s *Store) FenceBase() int64 { return s.fenceBase.Load() }

// ClusterBase reads the prefix's cluster record, writes it anew (with a
// new fence base, above every fence issued before) when it is gone or of
// another cluster, as a claim that finds it so does, and returns the fence
// base. An elector sharing the prefix calls it before each term
// (etcdleader.Options.CheckBase).
func (s *Store) ClusterBase(ctx context.Context) (int64, error) {
	if err := s.begin(ctx, "check the cluster"); err != nil {
		return 0, err
	}
	if err := s.checkCluster(ctx); err != nil {
		return 0, err
	}
	return s.fenceBase.Load(), nil
}

// Now is the store's clock: the members' time (Options.ClockSource), or
// Options.Clock. Leases, NotBefore and every time the store records are
// judged by it; an elector sharing the cluster must judge its leases by it
// too.
func (s *Store) Now() time.Time { return s.now() }

// Close stops keeping the process lease alive and stops the store's
// watches; a store made by Open also closes its client. It does not revoke
// the lease: the holder keys of slots still held expire with it, TTL after
// the last keepalive, as a slot held must be released or expire. It is
// safe to call more than once; calls after the first return nil, and every
// other method then returns an error wrapping slotstore.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	already := s.closed.Swap(true)
	s.mu.Unlock()
	if already {
		return nil
	}
	s.stop()
	s.workers.Wait()
	if !s.owned {
		return nil
	}
	if s.members != nil {
		s.members.close()
	}
	if err := s.client.Close(); err != nil && s.client.Ctx().Err() == nil {
		return fmt.Errorf("etcdstore: close: %w", err)
	}
	return nil
}

// Client returns the client the store uses, so that other parts of a
// replica (a leader elector) can share its connections. It stays owned by
// the store: do not close it.
func (s *Store) Client() *clientv3.Client { return s.client }

// Prefix returns the prefix of every key the store writes; it ends with
// "/".
func (s *Store) Prefix() string { return s.k.prefix }

// start runs f on a goroutine of its own that Close waits for, unless
// the store is closed; it reports whether it did.
func (s *Store) start(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		f()
	}()
	return true
}

// begin checks that op may start: the store is open and ctx is not done. A
// call that fails here has sent nothing.
func (s *Store) begin(ctx context.Context, op string) error {
	if s.closed.Load() {
		return fmt.Errorf("etcdstore: %s: %w", op, slotstore.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	return nil
}

// via returns the client to send one request through, and a function to
// call with the request's error: when the member left it unanswered or had
// no leader, the next request goes to another.
func (s *Store) via(ctx context.Context) (*clientv3.Client, func(error)) {
	if s.members == nil {
		return s.client, func(error) {}
	}
	i, c := s.members.pick()
	return c, func(err error) {
		// Judged whatever the caller's context: a member that is down
		// keeps a request waiting for a connection until the request's
		// deadline, and when the caller's is as short, no request would
		// ever move on from it.
		if err != nil && !s.closed.Load() && (transient(err) || unansweredRequest(err)) {
			s.members.failed(i)
		}
	}
}

// rpc returns the context of one request: ctx bounded by the request
// timeout, and refused by a member that has no leader (it could not
// answer linearizably, nor commit) so the client tries another.
func (s *Store) rpc(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(clientv3.WithRequireLeader(ctx), s.reqTTL)
}
