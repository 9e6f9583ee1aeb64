package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/internal/metrics"
)

// Options configure NewElector. The zero value is ready to use.
type Options struct {
	// Logger receives the elector's lines (see package leader's
	// documentation). Nil means slog.Default().
	Logger *slog.Logger
}

// NewElector returns a leader.Elector that keeps its leases in the store d
// talks to. A backend's constructor calls it and returns the Elector to
// its users.
func NewElector(d Driver, o Options) leader.Elector {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &elector{driver: d, log: o.Logger}
}

type elector struct {
	driver Driver
	log    *slog.Logger
}

func (e *elector) Lead(ctx context.Context, p leader.Params, fn func(context.Context, leader.Term)) error {
	p, err := withDefaults(p)
	if err != nil {
		return err
	}
	c := &campaign{
		driver: e.driver,
		p:      p,
		holder: p.Replica + "#" + nonce(),
		fn:     fn,
		log:    e.log.With("duty", p.Name, "replica", p.Replica),
		m:      metrics.For(p.Name),
	}
	c.run(ctx)
	return nil
}

// nonce makes each campaign's holder string unique, so that two campaigns
// of one replica name never mistake each other's lease for their own.
func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
