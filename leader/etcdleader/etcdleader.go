package etcdleader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

// DefaultPrefix starts every key when Options.Prefix is empty: the etcd
// store's default, so one cluster serves both, their keys apart.
const DefaultPrefix = "slotcron/"

// DefaultSessionTTL is the TTL of the elector's etcd lease when
// Options.SessionTTL is zero. It outlasts gRPC's detection of a silent
// member (its keepalive pings start after 10 s of silence at the
// earliest), so a frozen member that carried the lease's keepalive stream
// does not cost the lease: the client moves the stream to another member
// first.
const DefaultSessionTTL = 20 * time.Second

// DefaultClockSkew is Options.ClockSkew when it is zero.
const DefaultClockSkew = 50 * time.Millisecond

// Options configure New. The zero value is ready to use.
type Options struct {
	// Prefix starts every key. Empty means DefaultPrefix.
	Prefix string
	// SessionTTL is the TTL of the etcd lease that the elector holds for
	// its campaigns, kept alive while any campaign runs: etcd deletes the
	// holder keys attached to it once it has heard nothing from this
	// process for that long, and a term whose holder key is gone ends at
	// its next renewal. A whole number of seconds, at least one; etcd
	// raises a TTL below its own minimum (one and a half election
	// timeouts). Zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// ClockSkew is how far apart the replicas' clocks may be (see the
	// package documentation: leases are judged by the replicas' clocks).
	// A follower takes over a term only once the term's lease ended this
	// long ago by its own clock. Zero means DefaultClockSkew; it must not
	// be negative.
	ClockSkew time.Duration
	// Clock is the clock lease ends are written and judged by; nil means
	// time.Now. Every elector of a name must use one clock: the scheduler
	// gives the etcd store's (etcdstore.Store.Now, the members' time), so
	// the replicas' own clocks do not matter.
	Clock func() time.Time
	// FenceBase is added to the revision that created a term's key to make
	// its fence, unless the etcd store's cluster record lies under the
	// prefix: then each term reads the record's base in the transaction
	// that wins it (the store's clock in microseconds when the prefix's
	// keys began in this cluster), so that the terms of a cluster that
	// replaced another, its revisions starting near 1 again, or of a prefix
	// whose keys were deleted, are fenced above every term before. Zero
	// means the revision alone: an elector used without the store must then
	// not outlive its cluster. It must not be negative.
	FenceBase int64
	// CheckBase, when set, is called before every Acquire and returns a
	// fence base the term's fence is at least based on: the scheduler gives
	// the etcd store's ClusterBase, which reads the cluster record, and
	// writes it anew when the prefix's keys or the cluster were lost, so a
	// replica that leads a duty and claims no slot still bases its terms on
	// a record of the cluster it talks to.
	CheckBase func(ctx context.Context) (int64, error)
	// Logger receives the elector's lines. Nil means slog.Default().
	Logger *slog.Logger
}

// New returns an Elector that keeps its leases in the etcd cluster that c
// talks to. c stays the caller's to close, after every Lead has returned.
// New makes no request; it returns an error for a nil client, a bad
// SessionTTL or a negative ClockSkew.
//
// Give c every member's endpoint, a DialTimeout, and DialKeepAliveTime and
// DialKeepAliveTimeout (10 s and 2 s, say): then a killed member's requests
// fail over to the others at once, and a frozen member's connection is
// dropped once the keepalive times out. Until then, a call of the elector
// that a silent member holds is sent to another member after a quarter of
// the lease, and every call ends with its context.
func New(c *clientv3.Client, o Options) (leader.Elector, error) {
	d, err := newBackend(c, o)
	if err != nil {
		return nil, err
	}
	return driver.NewElector(d, driver.Options{Logger: d.log}), nil
}

// newBackend validates o and fills in its defaults.
func newBackend(c *clientv3.Client, o Options) (*backend, error) {
	if c == nil {
		return nil, errors.New("etcdleader: nil client")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	switch {
	case o.SessionTTL == 0:
		o.SessionTTL = DefaultSessionTTL
	case o.SessionTTL < time.Second || o.SessionTTL%time.Second != 0:
		return nil, fmt.Errorf("etcdleader: Options.SessionTTL %v is not a whole number of seconds of at least 1s", o.SessionTTL)
	}
	switch {
	case o.ClockSkew == 0:
		o.ClockSkew = DefaultClockSkew
	case o.ClockSkew < 0:
		return nil, fmt.Errorf("etcdleader: Options.ClockSkew %v is negative", o.ClockSkew)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.FenceBase < 0 {
		return nil, fmt.Errorf("etcdleader: Options.FenceBase %d is negative", o.FenceBase)
	}
	return &backend{c: c, prefix: o.Prefix, ttl: int64(o.SessionTTL / time.Second), skew: o.ClockSkew, now: o.Clock, fenceBase: o.FenceBase, checkBase: o.CheckBase,
		log: o.Logger}, nil
}

// clusterKey is the etcd store's record of the cluster under the prefix,
// whose fence base a term's fence is based on when it is there
// (etcdstore's clusterValue).
const clusterKey = "cluster"

// baseOf is the fence base of kvs, the cluster record as a term's Acquire
// read it, and at least floor.
func baseOf(kvs []*mvccpb.KeyValue, floor int64) int64 {
	if len(kvs) == 0 {
		return floor
	}
	var rec struct {
		FenceBase int64 `json:"fence_base"`
	}
	if json.Unmarshal(kvs[0].Value, &rec) != nil {
		return floor
	}
	return max(rec.FenceBase, floor)
}

// watches numbers the sessions' watch streams.
var watches atomic.Int64

// backend is the driver.Driver of etcd. Its campaigns share one etcd
// lease, the process's (sessionLease).
type backend struct {
	c      *clientv3.Client
	prefix string
	ttl    int64 // seconds
	skew   time.Duration
	now    func() time.Time // Options.Clock
	// fenceBase and checkBase are Options.FenceBase and CheckBase.
	fenceBase int64
	checkBase func(context.Context) (int64, error)
	log       *slog.Logger

	mu    sync.Mutex
	lease *sessionLease // nil when no campaign has a session open
}

// Open joins the elector's etcd lease, granting one first if none is
// kept alive, and watches the name's term key for deletions, so that a
// release is never missed between a held Acquire and the Wait after it.
//
// The watch requires its member to have a leader: one cut off from the
// quorum cancels it, and the campaign opens a new session. It runs on a
// gRPC stream of the session's own (the client shares a stream among
// watches whose contexts carry the same metadata), so a stream stuck on a
// silent member holds up one session, which times out and is replaced,
// not every session of the client.
func (d *backend) Open(ctx context.Context, name, holder string) (driver.Session, error) {
	k := keysOf(d.prefix, name)
	wctx, unwatch := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	wctx = metadata.AppendToOutgoingContext(wctx, "slotcron-watch", strconv.FormatInt(watches.Add(1), 10))
	// Watch blocks until the watch is set up, on a member that may not
	// answer: ctx ending cancels it.
	stop := context.AfterFunc(ctx, unwatch)
	ch := d.c.Watch(wctx, k.term, clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	if !stop() {
		unwatch()
		return nil, fmt.Errorf("etcdleader: %s: watch %s: %w", name, k.term, ctx.Err())
	}
	select {
	case resp, ok := <-ch:
		err := resp.Err()
		if err == nil && !ok {
			err = errors.New("the watch ended")
		}
		if err != nil {
			unwatch()
			return nil, fmt.Errorf("etcdleader: %s: watch %s: %w", name, k.term, err)
		}
	case <-ctx.Done():
		unwatch()
		return nil, fmt.Errorf("etcdleader: %s: watch %s: %w", name, k.term, ctx.Err())
	}
	l, err := d.joinLease(ctx)
	if err != nil {
		unwatch()
		return nil, fmt.Errorf("etcdleader: %s: %w", name, err)
	}
	return &session{d: d, lease: l, name: name, holder: holder, keys: k, hedge: hedgeAfter(0), deletions: ch, unwatch: unwatch}, nil
}
