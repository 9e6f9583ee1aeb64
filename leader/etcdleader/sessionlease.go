package etcdleader

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// sessionLease is the etcd lease an elector holds for all its campaigns,
// one per process: every holder key hangs on it. The client's KeepAlive
// keeps it alive while at least one session is open; when the last one
// closes, the keepalive stops and the lease is left to expire, never
// revoked, so a holder key of a term that could not be released stays
// until etcd has heard nothing from this process for the TTL.
type sessionLease struct {
	id clientv3.LeaseID
	// lost ends when the lease is lost: the keepalive channel closed (etcd
	// said the lease expired, or no keepalive was answered for the TTL), or
	// etcd refused it, or the keepalive was stopped. Its holder keys are
	// then gone, or may be at any moment.
	lost   context.Context
	lose   context.CancelFunc // ends lost
	stop   context.CancelFunc // ends the keepalive
	exited chan struct{}      // closed when the keepalive's reader returns
	warn   sync.Once
	log    *slog.Logger
	refs   int // open sessions; under backend.mu
}

// isLost reports whether the lease is lost.
func (l *sessionLease) isLost() bool { return l.lost.Err() != nil }

// expired marks the lease lost because etcd or the client gave up on it,
// stops its keepalive, and says so once.
func (l *sessionLease) expired() {
	l.warn.Do(func() {
		l.log.Warn("etcdleader: the etcd lease of this process's campaigns was lost; terms held under it end at their next renewal",
			"lease", fmt.Sprintf("%x", int64(l.id)))
	})
	l.lose()
	l.stop()
}

// joinLease returns the elector's etcd lease, counting one more session on
// it; a lease that is lost is replaced by a new one, granted with ctx.
func (d *backend) joinLease(ctx context.Context) (*sessionLease, error) {
	d.mu.Lock()
	l := d.joinLocked()
	d.mu.Unlock()
	if l != nil {
		return l, nil
	}
	g, err := d.c.Grant(ctx, d.ttl)
	if err != nil {
		return nil, fmt.Errorf("grant an etcd lease of %ds: %w", d.ttl, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.joinLocked(); l != nil {
		return l, nil // another session's grant came first; g expires unused
	}
	kctx, stop := context.WithCancel(context.Background())
	ch, err := d.c.KeepAlive(kctx, g.ID)
	if err != nil {
		stop()
		return nil, fmt.Errorf("keep etcd lease %x alive: %w", int64(g.ID), err)
	}
	lost, lose := context.WithCancel(context.Background())
	l = &sessionLease{id: g.ID, lost: lost, lose: lose, stop: stop, exited: make(chan struct{}), log: d.log, refs: 1}
	go func() {
		defer close(l.exited)
		for range ch { // the client drops answers nobody reads
		}
		if kctx.Err() == nil {
			l.expired()
		}
		lose()
	}()
	d.lease = l
	return l, nil
}

// joinLocked counts one more session on the elector's etcd lease and
// returns it, or returns nil when there is none or it is lost. d.mu is
// held.
func (d *backend) joinLocked() *sessionLease {
	l := d.lease
	if l == nil || l.isLost() {
		return nil
	}
	l.refs++
	return l
}

// leaveLease counts one session fewer on l. After the last, it stops the
// keepalive, without revoking the lease, and waits for its reader.
func (d *backend) leaveLease(l *sessionLease) {
	d.mu.Lock()
	l.refs--
	last := l.refs == 0
	if last && d.lease == l {
		d.lease = nil
	}
	d.mu.Unlock()
	if last {
		l.stop()
		<-l.exited
	}
}
