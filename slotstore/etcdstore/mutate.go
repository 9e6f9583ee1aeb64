package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Each fenced mutation is one transaction that compares the marker's
// ModRevision with the one it decided on, so the fence check and the write
// are one atomic step: a marker changed since (taken over, replaced,
// finished) fails the compare, and the transaction's Else reads it back
// to decide again. The marker as this store last wrote it (its claim or
// last renewal) is the first guess, so a mutation of a slot the store
// holds is one round trip.

// Renew implements slotstore.Store. It also puts the slot's holder key
// under the process lease again, which brings it back if the process was
// cut off from the cluster long enough for its old lease to expire.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := rules.ValidateRenew(p); err != nil {
		return err
	}
	return s.mutate(ctx, "renew", p.Ref, func(m slotstore.Marker, now time.Time, _ bool) (slotstore.Marker, error) {
		switch {
		case settled(m, p.Ref):
			return m, slotstore.ErrFinished
		case !holds(m, p.Ref):
			return m, slotstore.ErrLeaseLost
		}
		m.LeaseEnd = now.Add(p.Lease)
		return m, nil
	})
}

// Finish implements slotstore.Store.
func (s *Store) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if err := rules.ValidateFinish(p); err != nil {
		return err
	}
	return s.mutate(ctx, "finish", p.Ref, func(m slotstore.Marker, now time.Time, _ bool) (slotstore.Marker, error) {
		switch {
		case settled(m, p.Ref):
			return m, errSettled
		case !holds(m, p.Ref):
			return m, slotstore.ErrLeaseLost
		}
		m.State, m.LeaseEnd = slotstore.StateDone, now
		if !p.RetryAt.IsZero() {
			m.State, m.LeaseEnd = slotstore.StateRetrying, p.RetryAt
		}
		m.Outcome, m.Error, m.Duration, m.FinishedAt = p.Outcome, truncateError(p.Error), p.Duration, now
		return m, nil
	})
}

// Release implements slotstore.Store.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := rules.ValidateRef(ref); err != nil {
		return err
	}
	return s.mutate(ctx, "release", ref, func(m slotstore.Marker, now time.Time, resent bool) (slotstore.Marker, error) {
		if resent && m.State == slotstore.StateReleased && m.Fence == ref.Fence {
			return m, errSettled // the release sent before landed
		}
		if !holds(m, ref) {
			return m, slotstore.ErrLeaseLost
		}
		m.State, m.LeaseEnd = slotstore.StateReleased, now
		return m, nil
	})
}

// errSettled is what a finish returns for a slot already done or retrying
// under its fence: nil to the caller.
var errSettled = errors.New("settled under this fence")

// holds reports whether m is running under ref's claim.
func holds(m slotstore.Marker, ref slotstore.Ref) bool {
	return m.State == slotstore.StateRunning && m.Fence == ref.Fence
}

// settled reports whether m is done or retrying under ref's claim.
func settled(m slotstore.Marker, ref slotstore.Ref) bool {
	return (m.State == slotstore.StateDone || m.State == slotstore.StateRetrying) && m.Fence == ref.Fence
}

// mutate changes the marker of ref's slot as change says, given the
// marker, the store's time and whether a transaction of this call was sent
// before without an answer; change returns an error, and the marker stays,
// when the slot is not running under ref (a missing marker is never). The
// write keeps the running copy and the holder key with the marker.
//
// A transaction left unanswered (its request timed out, its connection
// broke, its proposal was lost with a leader that died) is sent again
// while ctx runs, to whichever member the client picks next, with the same
// compare: one that landed before makes it fail, its Else reads the marker
// back and the change is decided afresh from it, so it is seen (a finish
// settled under the fence; a release under it, which change is told of)
// and not applied twice. Only when ctx ends first is the outcome unknown.
func (s *Store) mutate(ctx context.Context, op string, ref slotstore.Ref,
	change func(m slotstore.Marker, now time.Time, resent bool) (slotstore.Marker, error)) error {
	ref.Slot = ref.Slot.UTC().Truncate(time.Second)
	op = fmt.Sprintf("%s %s@%s fence %d", op, ref.Job, slotKey(ref.Slot), ref.Fence)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	mk := s.k.marker(ref.Job, ref.Slot)
	cur, _ := s.cache.get(s.cache.markers, mk)
	resent := false
	for conflicts := 0; ; conflicts++ {
		if !cur.present && !cur.fresh {
			resp, err := s.get(ctx, op, mk)
			if err != nil {
				if resent {
					// The transaction sent before may have landed.
					return rules.OutcomeUnknown("etcdstore "+op, err)
				}
				return err
			}
			cur = entry{fresh: true}
			if len(resp.Kvs) > 0 {
				cur = entry{present: true, value: resp.Kvs[0].Value, mod: resp.Kvs[0].ModRevision, fresh: true}
			}
		}
		if !cur.present {
			s.cache.drop(s.cache.markers, mk)
			return lost(op)
		}
		m, err := decodeMarker(cur.value, cur.mod, s.fenceBase.Load())
		if err != nil {
			return s.failRead(op, fmt.Errorf("%w (key %q)", err, mk))
		}
		next, verdict := change(m, s.now(), resent)
		if verdict != nil {
			if !cur.fresh {
				cur = entry{} // the guess was wrong or old: read the marker
				continue
			}
			s.cache.drop(s.cache.markers, mk)
			if errors.Is(verdict, errSettled) {
				return nil
			}
			if resent && errors.Is(verdict, slotstore.ErrLeaseLost) {
				// The slot moved on, perhaps after the request sent before
				// landed (a release, then another's claim): whether this
				// call changed it cannot be told.
				return rules.OutcomeUnknown("etcdstore "+op, errors.New("a request went unanswered and the slot has since moved on"))
			}
			return fmt.Errorf("etcdstore: %s: %w", op, verdict)
		}
		v := encodeMarker(stored(next))
		writes := map[string]write{mk: {value: v}}
		order := []string{mk, s.k.run(ref.Job, ref.Slot), s.k.holder(ref.Job, ref.Slot)}
		if next.State == slotstore.StateRunning {
			writes[order[1]] = write{value: v}
			writes[order[2]] = write{value: encodeHolder(ref.Fence), lease: true}
		} else {
			writes[order[1]] = write{del: true}
			writes[order[2]] = write{del: true}
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(mk), "=", cur.mod)}
		resp, err := s.commit(ctx, op, cmps, order, writes, []clientv3.Op{clientv3.OpGet(mk)})
		if err != nil {
			s.cache.drop(s.cache.markers, mk)
			if s.unanswered(ctx, err) {
				// Sent again as it was: if the first landed, the compare
				// fails and the Else reads the marker back. (A separate
				// read first would alternate with the transaction over
				// the client's round robin, and with two members could
				// send every transaction to the one that does not answer.)
				resent = true
				pause(ctx, retryWait(0))
				continue
			}
			if resent {
				return rules.OutcomeUnknown("etcdstore "+op, err) // the request sent before may have landed
			}
			return s.fail(op, err)
		}
		if resp.Succeeded {
			if next.State == slotstore.StateRunning {
				s.cache.put(s.cache.markers, mk, entry{present: true, value: v, mod: resp.Header.Revision})
			} else {
				s.cache.drop(s.cache.markers, mk)
			}
			return nil
		}
		if conflicts >= maxConflicts {
			return fmt.Errorf("etcdstore: %s: %w (%d attempts)", op, ErrConflict, conflicts+1)
		}
		cur = entry{fresh: true}
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			cur = entry{present: true, value: kvs[0].Value, mod: kvs[0].ModRevision, fresh: true}
		}
	}
}
