package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.Store = (*Store)(nil)

// Store is a slotstore.Store kept in Redis. It is safe for concurrent use by
// many goroutines, and any number of Stores, in any number of processes, may
// share one Redis and prefix. Its zero value is not usable; call Open or
// New.
type Store struct {
	client redis.UniversalClient
	owned  bool   // Close closes client
	prefix string // starts every key
	// single is true for a plain *redis.Client, whose every key lives on one
	// server: scripts may then touch keys of several jobs and the set of job
	// names together. Otherwise (Cluster, Ring) each script keeps to one
	// hash slot.
	single bool
	// wait is Options.WaitReplicas: how many replicas must acknowledge a
	// claim, renewal or finish, within waitTimeout.
	wait        int
	waitTimeout time.Duration
	closed      atomic.Bool
}

// Open connects to the Redis that o describes, checks that it answers and
// loads the store's scripts into it; the store owns its client, and Close
// closes it. Options that Validate refuses are an error wrapping
// slotstore.ErrInvalid and Validate's error. Errors name the addresses,
// never the password.
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("redisstore: options: %w: %w", slotstore.ErrInvalid, err)
	}
	o = o.withDefaults()
	uo, err := o.universal()
	if err != nil {
		return nil, err
	}
	where := strings.Join(o.Addrs, ",")
	if o.MasterName != "" {
		where = fmt.Sprintf("master %s via sentinels %s", o.MasterName, where)
	}
	c := redis.NewUniversalClient(uo)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisstore: connect to %s: %w", where, err)
	}
	if err := loadScripts(ctx, c); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisstore: load scripts into %s: %w", where, err)
	}
	s := newStore(c, o.Prefix)
	s.owned = true
	s.wait, s.waitTimeout = o.WaitReplicas, o.WaitTimeout
	return s, nil
}

// New returns a store that uses c, a client the caller configured and
// still owns (Close leaves it open), with keys under o.Prefix (empty means
// DefaultPrefix) and waiting for replicas as o.WaitReplicas and
// o.WaitTimeout say (keep WaitTimeout below c's read timeout). o's other settings are about connecting, which c
// does: they must be empty. Bad options
// are an error wrapping slotstore.ErrInvalid. Scripts are loaded on first
// use. The store never lets c retry its scripts, whatever c's MaxRetries,
// but c's timeouts bound every call: give it read and write timeouts (the
// go-redis defaults do) and ContextTimeoutEnabled, so a lost reply ends as
// an error and not a hang.
func New(c redis.UniversalClient, o Options) (*Store, error) {
	if c == nil {
		return nil, fmt.Errorf("redisstore: %w: nil client", slotstore.ErrInvalid)
	}
	if set := o.connectionKeys(); len(set) > 0 {
		return nil, fmt.Errorf("redisstore: options: %w: %s given, but New uses the client it is given", slotstore.ErrInvalid,
			strings.Join(set, ", "))
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("redisstore: options: %w: %w", slotstore.ErrInvalid, err)
	}
	o = o.withDefaults()
	s := newStore(c, o.Prefix)
	s.wait, s.waitTimeout = o.WaitReplicas, o.WaitTimeout
	return s, nil
}

// newStore returns a store on c with keys under prefix, which Validate
// accepted (empty means DefaultPrefix).
func newStore(c redis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	_, single := c.(*redis.Client)
	return &Store{client: c, prefix: prefix, single: single}
}

// connectionKeys names the settings of o about connecting that are set:
// New takes none of them.
func (o Options) connectionKeys() []string {
	var set []string
	for _, f := range []struct {
		key string
		set bool
	}{
		{"addr", o.Addr != ""}, {"addrs", len(o.Addrs) > 0}, {"master_name", o.MasterName != ""},
		{"username and password", o.Username != "" || o.Password != ""}, {"db", o.DB != 0}, {"tls", o.TLS != TLSOptions{}},
		{"dial_timeout", o.DialTimeout != 0}, {"read_timeout", o.ReadTimeout != 0}, {"write_timeout", o.WriteTimeout != 0},
		{"pool_size", o.PoolSize != 0},
	} {
		if f.set {
			set = append(set, f.key)
		}
	}
	return set
}

// Close closes the connections of a store made by Open; a store made by
// New leaves its client open. It is safe to call more than once;
// calls after the first return nil, and every other method then returns an
// error wrapping slotstore.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.owned {
		return nil
	}
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("redisstore: close: %w", err)
	}
	return nil
}

// begin checks that op may start: the store is open and ctx is not done. A
// call that fails here has sent nothing.
func (s *Store) begin(ctx context.Context, op string) error {
	if s.closed.Load() {
		return fmt.Errorf("redisstore: %s: %w", op, slotstore.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return nil
}

// Client returns the client the store uses, so that other parts of a
// replica (a leader elector, fenced writes) can share its connections. It
// stays owned by the store: do not close it.
func (s *Store) Client() redis.UniversalClient { return s.client }

// Prefix returns the prefix of every key the store writes.
func (s *Store) Prefix() string { return s.prefix }
