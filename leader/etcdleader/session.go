package etcdleader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

// session is one campaign's use of etcd: its name's keys, and the
// elector's etcd lease, which it holds a share of until Close.
type session struct {
	d *backend
	// termRev and termFence are the revision and the fence of the term the
	// session won last.
	termRev, termFence int64
	lease              *sessionLease
	name               string
	holder             string
	keys               keys
	// hedge is how long a call waits for an answer before it also asks
	// another member (hedgeAfter the lease the last Acquire was given).
	hedge time.Duration
	// seen is the revision at which the last Acquire found the name held;
	// Wait waits for a deletion after it.
	seen int64
	// deletions are the term key's deletions since the session opened,
	// from a watch that unwatch ends.
	deletions clientv3.WatchChan
	unwatch   context.CancelFunc
}

// acquireRounds bounds how often one Acquire ends an expired term and
// tries again, when other campaigns keep winning the race.
const acquireRounds = 4

// Acquire implements driver.Session. A term wins by creating the term key
// and its holder key afresh (both must be absent) in one Txn, whose
// revision is the fence. A term key whose lease ended at least the clock
// skew ago by this process's clock, or that is this campaign's own (an
// Acquire whose reply was lost), is deleted first, comparing its
// ModRevision with the one the decision read; so every term creates the
// key anew and is fenced by a revision no other term had.
func (s *session) Acquire(ctx context.Context, lease time.Duration) (driver.Attempt, error) {
	s.hedge = hedgeAfter(lease)
	floor := s.d.fenceBase
	if s.d.checkBase != nil {
		b, err := s.d.checkBase(ctx)
		if err != nil {
			return driver.Attempt{}, fmt.Errorf("etcdleader: acquire %s: the fence base: %w", s.name, err)
		}
		floor = max(floor, b)
	}
	for range acquireRounds {
		v := termValue{until: s.d.now().Add(lease), holder: s.holder}.encode()
		resp, err := s.txn(ctx, s.hedge, true, func(t clientv3.Txn) clientv3.Txn {
			return t.If(clientv3.Compare(clientv3.CreateRevision(s.keys.term), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(s.keys.holder), "=", 0)).
				Then(clientv3.OpPut(s.keys.term, v),
					clientv3.OpPut(s.keys.holder, s.holder, clientv3.WithLease(s.lease.id)),
					clientv3.OpGet(s.d.prefix+clusterKey)).
				Else(clientv3.OpGet(s.keys.term), clientv3.OpGet(s.keys.holder))
		})
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.lease.expired() // etcd let it expire before the client noticed
		}
		if err != nil {
			return driver.Attempt{}, s.fail("acquire", err)
		}
		if resp.Succeeded {
			s.termRev = resp.Header.Revision
			s.termFence = baseOf(resp.Responses[2].GetResponseRange().GetKvs(), floor) + s.termRev
			return driver.Attempt{Won: true, Fence: s.termFence}, nil
		}
		s.seen = resp.Header.Revision
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			// No term, but a holder key: its term key was deleted by
			// hand. Delete it too, so the next round creates both.
			if err := s.endTerm(ctx, s.keys.holder, resp.Responses[1].GetResponseRange().GetKvs()); err != nil {
				return driver.Attempt{}, err
			}
			continue
		}
		cur, err := decodeTerm(kvs[0].Value)
		if err != nil {
			return driver.Attempt{}, s.fail("acquire", fmt.Errorf("key %s: %w", s.keys.term, err))
		}
		if left := cur.until.Sub(s.d.now()) + s.d.skew; cur.holder != s.holder && left > 0 {
			return driver.Attempt{Remaining: left}, nil
		}
		if err := s.endTerm(ctx, s.keys.term, kvs); err != nil {
			return driver.Attempt{}, err
		}
	}
	return driver.Attempt{}, nil // others kept winning: look again at once
}

// endTerm deletes the term key and the holder key if the one of them that
// key names is still as kvs read it (unchanged since, by its ModRevision).
func (s *session) endTerm(ctx context.Context, key string, kvs []*mvccpb.KeyValue) error {
	if len(kvs) == 0 {
		return nil
	}
	rev := kvs[0].ModRevision
	_, err := s.txn(ctx, s.hedge, false, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpDelete(s.keys.term), clientv3.OpDelete(s.keys.holder))
	})
	if err != nil {
		return s.fail("end the last term of", err)
	}
	return nil
}

// Renew implements driver.Session. It writes the new lease end only while
// the term key and the holder key are still the ones this term created
// (their CreateRevision is the fence), and only if that moves the lease
// end forward: an attempt that reaches etcd late, after a later one, must
// not shorten the lease the later one granted. A term whose keys are gone
// (released, taken over, or the holder key deleted with an expired etcd
// lease), or whose etcd lease this process lost, is lost.
func (s *session) Renew(ctx context.Context, fence int64, lease time.Duration) error {
	v := termValue{until: s.d.now().Add(lease), holder: s.holder}.encode()
	rev := s.revOf(fence)
	resp, err := s.txn(ctx, hedgeAfter(lease), true, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.CreateRevision(s.keys.term), "=", rev),
			clientv3.Compare(clientv3.CreateRevision(s.keys.holder), "=", rev),
			clientv3.Compare(clientv3.Value(s.keys.term), "<", v)).
			Then(clientv3.OpPut(s.keys.term, v)).
			Else(clientv3.OpGet(s.keys.term), clientv3.OpGet(s.keys.holder))
	})
	switch {
	case errors.Is(err, errLeaseGone):
		return fmt.Errorf("etcdleader: renew %s fence %d: %w: %w", s.name, fence, leader.ErrLeaseLost, err)
	case err != nil:
		return fmt.Errorf("etcdleader: renew %s fence %d: %w", s.name, fence, err)
	case resp.Succeeded:
		return nil
	}
	if created(resp, 0) == rev && created(resp, 1) == rev {
		return nil // held, its lease already ends later (the wall clock stepped back)
	}
	return fmt.Errorf("etcdleader: renew %s fence %d: %w", s.name, fence, leader.ErrLeaseLost)
}

// revOf is the revision that created the term fence stands for.
func (s *session) revOf(fence int64) int64 {
	if fence == s.termFence {
		return s.termRev
	}
	return fence - s.d.fenceBase
}

// created is the CreateRevision of the key the i-th Get of resp read, or 0
// when it was absent.
func created(resp *clientv3.TxnResponse, i int) int64 {
	kvs := resp.Responses[i].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return 0
	}
	return kvs[0].CreateRevision
}

// Release implements driver.Session: it deletes both keys if the term key
// is still the one the term created, which wakes the waiting followers.
func (s *session) Release(ctx context.Context, fence int64) error {
	_, err := s.txn(ctx, s.hedge, false, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.CreateRevision(s.keys.term), "=", s.revOf(fence))).
			Then(clientv3.OpDelete(s.keys.term), clientv3.OpDelete(s.keys.holder))
	})
	if err != nil {
		return fmt.Errorf("etcdleader: release %s fence %d: %w", s.name, fence, err)
	}
	return nil
}

// Wait implements driver.Session: it waits for a deletion of the term key
// after the revision the last Acquire read, on the watch the session
// opened before its first Acquire, so a release that came in between is
// not missed and is seen as soon as etcd applies it.
func (s *session) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case resp, ok := <-s.deletions:
			if !ok {
				return s.fail("watch", errors.New("the watch ended"))
			}
			if err := resp.Err(); err != nil {
				return s.fail("watch", err)
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision > s.seen {
					return nil
				}
			}
		case <-t.C:
			return nil // the lease's time is up
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close implements driver.Session. A term still held is not released: its
// key's lease end passes, and its holder key goes with the etcd lease.
func (s *session) Close() error {
	s.unwatch()
	s.d.leaveLease(s.lease)
	return nil
}

func (s *session) fail(op string, err error) error {
	return fmt.Errorf("etcdleader: %s %s: %w", op, s.name, err)
}
