package redisleader

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

// DefaultPrefix starts every key when Options.Prefix is empty: the slot
// store's default, so one Redis serves both, their keys apart.
const DefaultPrefix = "slotcron:"

// Options configure New. The zero value is ready to use.
type Options struct {
	// Prefix starts every key and channel. Empty means DefaultPrefix.
	Prefix string
	// Logger receives the elector's lines. Nil means slog.Default().
	Logger *slog.Logger
}

// New returns an Elector that keeps its leases in the Redis that c talks
// to: a *redis.Client (standalone or through Sentinel) or a
// *redis.ClusterClient. c stays the caller's to close, after every Lead
// has returned.
//
// Give c ContextTimeoutEnabled: a renewal is given until the end of the
// trust window, and without it go-redis waits for c's ReadTimeout instead
// of the context's deadline, so a leader whose Redis stopped answering
// would notice late (its term's context is still cancelled on time).
func New(c redis.UniversalClient, o Options) leader.Elector {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	return driver.NewElector(&backend{c: c, prefix: o.Prefix}, driver.Options{Logger: o.Logger})
}

// backend is the driver.Driver of Redis.
type backend struct {
	c      redis.UniversalClient
	prefix string
}

// Open subscribes to the name's release channel, so that a release is
// never missed between a held Acquire and the Wait that follows it.
func (d *backend) Open(ctx context.Context, name, holder string) (driver.Session, error) {
	k := keysOf(d.prefix, name)
	ps := d.c.Subscribe(ctx, k.channel)
	// An explicit timeout: go-redis reads a subscription's reply with no
	// deadline of its own, and a silent server would hold Open forever.
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if _, err := ps.ReceiveTimeout(ctx, timeout); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redisleader: %s: subscribe to %s: %w", name, k.channel, err)
	}
	return &session{c: d.c, name: name, holder: holder, keys: k, ps: ps, released: ps.Channel()}, nil
}
