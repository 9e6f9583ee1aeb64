package etcdstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// read sends ops, which only read, as one transaction: one revision, one
// round trip. A member that cannot answer is left for another by the
// client, which retries reads.
func (s *Store) read(ctx context.Context, op string, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	return s.readIf(ctx, op, nil, ops, nil)
}

// readIf is read of a transaction with compares: then when they hold,
// else els; all of them only read.
func (s *Store) readIf(ctx context.Context, op string, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, s.failRead(op, err)
		}
		rctx, cancel := s.rpc(ctx)
		c, done := s.via(ctx)
		resp, err := c.Txn(rctx).If(cmps...).Then(then...).Else(els...).Commit()
		cancel()
		done(err)
		if err == nil {
			return resp, nil
		}
		if !(transient(err) || s.unanswered(ctx, err)) || attempt >= maxRetries {
			return nil, s.failRead(op, err)
		}
		pause(ctx, retryWait(attempt))
	}
}

// get reads one key or range.
func (s *Store) get(ctx context.Context, op, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, s.failRead(op, err)
		}
		rctx, cancel := s.rpc(ctx)
		c, done := s.via(ctx)
		resp, err := c.Get(rctx, key, opts...)
		cancel()
		done(err)
		if err == nil {
			return resp, nil
		}
		if !(transient(err) || s.unanswered(ctx, err)) || attempt >= maxRetries {
			return nil, s.failRead(op, err)
		}
		pause(ctx, retryWait(attempt))
	}
}

// commit sends one transaction: cmps, then the writes in order (puts under
// the process lease where a write says so) and more, else els. It sends it again
// when etcd refused it for a passing reason (no leader yet) or because the
// process lease it carried is gone (after granting a new one), and returns
// the error of a send that failed otherwise, unclassified.
func (s *Store) commit(ctx context.Context, op string, cmps []clientv3.Cmp, order []string, writes map[string]write,
	els []clientv3.Op, more ...clientv3.Op) (*clientv3.TxnResponse, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, unsent(err)
		}
		lease := s.currentLease()
		then := make([]clientv3.Op, 0, len(order)+len(more))
		for _, k := range order {
			w := writes[k]
			switch {
			case w.del:
				then = append(then, clientv3.OpDelete(k))
			case w.lease:
				then = append(then, clientv3.OpPut(k, string(w.value), clientv3.WithLease(lease)))
			default:
				then = append(then, clientv3.OpPut(k, string(w.value)))
			}
		}
		then = append(then, more...)
		rctx, cancel := s.rpc(ctx)
		c, done := s.via(ctx)
		resp, err := c.Txn(rctx).If(cmps...).Then(then...).Else(els...).Commit()
		cancel()
		done(err)
		switch {
		case err == nil:
			return resp, nil
		case attempt >= maxRetries:
			return nil, err
		case leaseGone(err):
			if _, gerr := s.regrant(ctx, lease); gerr != nil {
				return nil, fmt.Errorf("%w (and granting a new process lease: %w)", err, gerr)
			}
		case transient(err):
			pause(ctx, retryWait(attempt))
		default:
			return nil, err
		}
	}
}

// retryWait is the wait before the attempt after attempt: from 25 ms,
// doubling, to half a second.
func retryWait(attempt int) time.Duration {
	return min(25*time.Millisecond<<min(attempt, 5), 500*time.Millisecond)
}

// remember keeps in the store's cache what a call learnt of a generation
// or job key.
func (s *Store) remember(key string, e entry) {
	if s.k.stable(key) {
		s.cache.put(s.cache.stable, key, e)
	}
}

// cached returns the store's cached entry of key, not fresh, or an absent
// one.
func (s *Store) cached(key string) (entry, bool) {
	switch {
	case s.k.stable(key):
		return s.cache.get(s.cache.stable, key)
	case strings.HasPrefix(key, s.k.prefix+dirMarkers):
		return s.cache.get(s.cache.markers, key)
	}
	return entry{}, false
}
