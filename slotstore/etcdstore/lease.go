package etcdstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The process lease: one etcd lease per Store, kept alive by the client for
// as long as the store is open. Every holder key the store writes is under
// it, so when the process dies or is cut off from the cluster's quorum for
// the lease's TTL, the cluster deletes them by its own clock and the
// replicas watching them (WatchHolder) learn of it. Close never revokes it:
// it expires.

// grant asks for a new lease of the store's TTL, asking again while a
// request goes unanswered and ctx runs (a lease granted by an unanswered
// request is never used, and expires).
func (s *Store) grant(ctx context.Context) (clientv3.LeaseID, error) {
	for attempt := 0; ; attempt++ {
		rctx, cancel := s.rpc(ctx)
		c, done := s.via(ctx)
		resp, err := c.Grant(rctx, int64(s.ttl/time.Second))
		cancel()
		done(err)
		switch {
		case err == nil:
			return resp.ID, nil
		case attempt >= maxRetries || !(transient(err) || s.unanswered(ctx, err)):
			return 0, err
		}
		pause(ctx, retryWait(attempt))
	}
}

// currentLease is the lease holder keys are written under now.
func (s *Store) currentLease() clientv3.LeaseID { return clientv3.LeaseID(s.lease.Load()) }

// keepLease keeps the process lease alive until the store closes. When the
// lease ends anyway (the process was cut off from the quorum for its TTL,
// so the cluster expired it and deleted its holder keys) it grants a new
// one; a renewal of each slot still held puts its holder key back under
// it (Renew).
func (s *Store) keepLease() {
	for s.bg.Err() == nil {
		id := s.currentLease()
		ch, err := s.client.KeepAlive(s.bg, id)
		if err == nil {
			for range ch {
			}
		}
		if s.bg.Err() != nil || s.client.Ctx().Err() != nil {
			return
		}
		// The channel closed: the lease expired, or no keepalive was
		// answered within its TTL and it may have.
		if _, err := s.regrant(s.bg, id); err != nil {
			pause(s.bg, time.Second)
		}
	}
}

// regrant replaces the process lease, when it is still old, by a new one,
// and returns the lease to use. Callers that met rpctypes.ErrLeaseNotFound
// call it with the lease their request carried.
func (s *Store) regrant(ctx context.Context, old clientv3.LeaseID) (clientv3.LeaseID, error) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if cur := s.currentLease(); cur != old {
		return cur, nil // another caller granted one already
	}
	id, err := s.grant(ctx)
	if err != nil {
		return 0, err
	}
	s.lease.Store(int64(id))
	return id, nil
}

// leaseGone reports an error of a request that carried a lease the
// cluster no longer has: the request changed nothing.
func leaseGone(err error) bool { return errors.Is(err, rpctypes.ErrLeaseNotFound) }

// pause waits for d, jittered by up to a half, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	d += time.Duration(rand.Int64N(int64(d/2) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
