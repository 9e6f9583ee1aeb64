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
// share one Redis and prefix. Its zero value is not usable; call New or
// NewWithClient.
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

// New connects to the Redis that o describes, checks that it answers and
// loads the store's scripts into it. Options that Validate refuses are an
// error wrapping slotstore.ErrInvalid and Validate's error. Errors name the
// addresses, never the password.
func New(ctx context.Context, o Options) (*Store, error) {
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
	s := NewWithClient(c, o.Prefix)
	s.owned = true
	s.wait, s.waitTimeout = o.WaitReplicas, o.WaitTimeout
	return s, nil
}

// NewWithClient returns a store that uses c, a client configured by the
// caller, with keys under prefix (empty means DefaultPrefix). Close leaves
// c open. Scripts are loaded on first use. The store never lets c retry its
// scripts, whatever c's MaxRetries, but c's timeouts bound every call: give
// it read and write timeouts (the go-redis defaults do) and
// ContextTimeoutEnabled, so a lost reply ends as an error and not a hang.
//
// Such a store never waits for replicas (Options.WaitReplicas).
//
// It panics if prefix contains a brace, which Redis Cluster would read as a
// hash tag: like regexp.MustCompile, it is meant for static setup.
func NewWithClient(c redis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		panic(fmt.Sprintf("redisstore: prefix %q contains a brace", prefix))
	}
	_, single := c.(*redis.Client)
	return &Store{client: c, prefix: prefix, single: single}
}

// Close closes the connections of a store made by New; a store made by
// NewWithClient leaves its client open. It is safe to call more than once;
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
