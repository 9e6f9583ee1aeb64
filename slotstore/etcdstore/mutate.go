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

// change decides a fenced mutation: given the marker, the store's time and
// whether a transaction of the call was sent before without an answer, it
// returns the marker to write, or an error when the slot is not running
// under the call's ref (and the marker stays).
type change func(m slotstore.Marker, now time.Time, resent bool) (slotstore.Marker, error)

// mutate changes the marker of ref's slot as change says; change returns
// an error when the slot is not running under ref (a missing marker is
// never). The write keeps the running copy and the holder key with the
// marker.
//
// A transaction left unanswered (its request timed out, its connection
// broke, its proposal was lost with a leader that died) is sent again
// while ctx runs, to whichever member the client picks next, with the same
// compare: one that landed before makes it fail, its Else reads the marker
// back and the change is decided afresh from it, so it is seen (a finish
// settled under the fence; a release under it, which change is told of)
// and not applied twice. Only when ctx ends first is the outcome unknown.
func (s *Store) mutate(ctx context.Context, op string, ref slotstore.Ref, ch change) error {
	ref.Slot = ref.Slot.UTC().Truncate(time.Second)
	op = fmt.Sprintf("%s %s@%s fence %d", op, ref.Job, slotKey(ref.Slot), ref.Fence)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	mu := &mutation{s: s, ctx: ctx, op: op, ref: ref, key: s.k.marker(ref.Job, ref.Slot)}
	mu.cur, _ = s.cache.get(s.cache.markers, mu.key)
	for conflicts := 0; ; conflicts++ {
		next, err := mu.decide(ch)
		switch {
		case errors.Is(err, errGuessed):
			mu.cur = entry{} // the guess was wrong or old: read the marker
			continue
		case errors.Is(err, errSettled):
			return nil
		case err != nil:
			return err
		}
		resp, err := mu.send(next)
		switch {
		case errors.Is(err, errResend):
			continue
		case err != nil:
			return err
		case resp.Succeeded:
			return nil
		case conflicts >= maxConflicts:
			return fmt.Errorf("etcdstore: %s: %w (%d attempts)", op, ErrConflict, conflicts+1)
		}
		mu.cur = entryOf(resp.Responses[0].GetResponseRange().GetKvs())
	}
}

// mutation is one call of mutate: the marker it changes and what it knows
// of it.
type mutation struct {
	s   *Store
	ctx context.Context
	op  string
	ref slotstore.Ref
	key string // the marker's
	// cur is the marker as last read, or guessed from the cache.
	cur entry
	// resent is set once a transaction of the call went unanswered and was
	// sent again.
	resent bool
}

// errGuessed is what decide returns when change refused a marker that
// was guessed, not read; errResend what send returns for a transaction to
// send again.
var (
	errGuessed = errors.New("refused a guessed marker")
	errResend  = errors.New("unanswered: send again")
)

// decide reads the marker unless the mutation knows it, and applies ch to
// it. A refusal of a marker as read is the call's error (errSettled for a
// slot settled under the fence); of a marker guessed, errGuessed.
func (mu *mutation) decide(ch change) (slotstore.Marker, error) {
	if err := mu.know(); err != nil {
		return slotstore.Marker{}, err
	}
	if !mu.cur.present {
		mu.s.cache.drop(mu.s.cache.markers, mu.key)
		return slotstore.Marker{}, lost(mu.op)
	}
	m, err := decodeMarker(mu.cur.value, mu.cur.mod, mu.s.fenceBase.Load())
	if err != nil {
		return m, mu.s.failRead(mu.op, fmt.Errorf("%w (key %q)", err, mu.key))
	}
	next, verdict := ch(m, mu.s.now(), mu.resent)
	switch {
	case verdict == nil:
		return next, nil
	case !mu.cur.fresh:
		return next, errGuessed
	}
	mu.s.cache.drop(mu.s.cache.markers, mu.key)
	switch {
	case errors.Is(verdict, errSettled):
		return next, errSettled
	case mu.resent && errors.Is(verdict, slotstore.ErrLeaseLost):
		// The slot moved on, perhaps after the request sent before landed
		// (a release, then another's claim): whether this call changed it
		// cannot be told.
		return next, rules.OutcomeUnknown("etcdstore "+mu.op, errors.New("a request went unanswered and the slot has since moved on"))
	}
	return next, fmt.Errorf("etcdstore: %s: %w", mu.op, verdict)
}

// know reads the marker unless the mutation has it, or knows it absent.
func (mu *mutation) know() error {
	if mu.cur.present || mu.cur.fresh {
		return nil
	}
	resp, err := mu.s.get(mu.ctx, mu.op, mu.key)
	if err != nil {
		if mu.resent {
			// The transaction sent before may have landed.
			return rules.OutcomeUnknown("etcdstore "+mu.op, err)
		}
		return err
	}
	mu.cur = entryOf(resp.Kvs)
	return nil
}

// send writes next, with the slot's running copy and holder key, if the
// marker is still as the mutation read it; the Else reads it back. It goes
// with other mutations sent at the same time (group.go). It
// returns errResend when the transaction went unanswered and is to be sent
// again as it was. The cache keeps the marker written while it runs.
func (mu *mutation) send(next slotstore.Marker) (*clientv3.TxnResponse, error) {
	s, ref := mu.s, mu.ref
	v := encodeMarker(stored(next))
	writes := map[string]write{mu.key: {value: v}}
	order := []string{mu.key, s.k.run(ref.Job, ref.Slot), s.k.holder(ref.Job, ref.Slot)}
	if next.State == slotstore.StateRunning {
		writes[order[1]] = write{value: v}
		writes[order[2]] = write{value: encodeHolder(ref.Fence), lease: true}
	} else {
		writes[order[1]] = write{del: true}
		writes[order[2]] = write{del: true}
	}
	resp, err := s.commitGrouped(&grouped{ctx: mu.ctx, op: mu.op, key: mu.key, mod: mu.cur.mod, order: order, writes: writes})
	if err != nil {
		s.cache.drop(s.cache.markers, mu.key)
		if s.unanswered(mu.ctx, err) {
			// Sent again as it was: if the first landed, the compare fails
			// and the Else reads the marker back. (A separate read first
			// would alternate with the transaction over the client's round
			// robin, and with two members could send every transaction to
			// the one that does not answer.)
			mu.resent = true
			pause(mu.ctx, retryWait(0))
			return nil, errResend
		}
		if mu.resent {
			return nil, rules.OutcomeUnknown("etcdstore "+mu.op, err) // the request sent before may have landed
		}
		return nil, s.fail(mu.op, err)
	}
	switch {
	case resp.Succeeded && next.State == slotstore.StateRunning:
		s.cache.put(s.cache.markers, mu.key, entry{present: true, value: v, mod: resp.Header.Revision})
	case resp.Succeeded:
		s.cache.drop(s.cache.markers, mu.key)
	}
	return resp, nil
}
