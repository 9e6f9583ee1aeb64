package etcdstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Claim implements slotstore.Store. The batch is decided in order by
// slotstore's decision table and committed in transactions of consecutive
// requests (batch.go); each winning claim's fence is the revision of the
// transaction that committed it, and no transaction holds two claims of
// one job that take a fence.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeClaims(p.Requests)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if !keyable(r.Slot) {
			return nil, fmt.Errorf("%w: claim %s: slot %s is outside the years 0001 to 9999", slotstore.ErrInvalid, r.Job, r.Slot)
		}
	}
	if err := s.begin(ctx, "claim"); err != nil {
		return nil, err
	}
	out := make([]slotstore.ClaimResult, len(reqs))
	b := s.newBatch(ctx, "claim")
	b.keysOf = func(i int) []string {
		r := reqs[i]
		if r.Spec != "" {
			return []string{s.k.marker(r.Job, r.Slot), s.k.gen(r.Job), s.k.job(r.Job), s.k.spec(r.Job)}
		}
		return []string{s.k.marker(r.Job, r.Slot), s.k.gen(r.Job), s.k.job(r.Job)}
	}
	err = b.run(len(reqs), func(i int, st *step) {
		out[i] = s.decideClaim(p, reqs[i], st)
	}, func(i int, rev int64) {
		r := &out[i]
		if r.Marker.Fence == pendingFence {
			r.Marker.Fence = s.fenceBase.Load() + rev
		}
		if r.Status == slotstore.Won {
			r.Claim.Fence = r.Marker.Fence
			mk := s.k.marker(r.Claim.Job, r.Claim.Slot)
			s.cache.put(s.cache.markers, mk, b.keys[mk])
		}
	})
	if err != nil {
		return nil, err
	}
	// No answer's time (ClaimResult.Answered): the store's clock is this
	// process's reckoning of the members', read at each decision, and one
	// read once the transactions are back would be read after the answer
	// left, not before.
	return out, nil
}

// decideClaim decides r in st, writing what the decision changes: the
// marker; its running copy, put while it runs and deleted when it stops;
// the holder key under the process lease, put by a winning claim and
// deleted when the slot stops running; the job's generation, begun by a
// claim of a job that has none; the job's key, by a claim that creates a
// marker; and, for a replace claim, the markers it supersedes. A claim
// naming a spec not in force reads nothing else and writes nothing.
func (s *Store) decideClaim(p slotstore.ClaimParams, r slotstore.ClaimRequest, st *step) slotstore.ClaimResult {
	if !st.specAllows(r.Job, r.Spec) {
		return rules.Superseded(r.Job, r.Slot)
	}
	mk := s.k.marker(r.Job, r.Slot)
	cur, ok := st.marker(mk)
	if !ok {
		return slotstore.ClaimResult{}
	}
	// The marker may come from the store's cache, put there by a claim
	// that committed after this step began: judge it by a clock read after
	// it, or a lease written then looks longer than it is.
	st.now = s.now()
	born := st.born(r.Job)
	var running []slotstore.Marker
	if rules.ReadsRunning(cur, rules.Effective(r, st.now)) {
		running = st.running(r.Job)
	}
	d := rules.Decide(cur, r, st.now, born, running)
	var base slotstore.Marker
	if cur != nil {
		base = *cur
	}
	var fence int64
	if d == rules.DecideWin || d == rules.DecideReplace {
		fence, st.fence = pendingFence, r.Job
	}
	m, res := rules.Apply(d, base, r, p.Replica, p.Incarnation, fence, st.now)
	if d == rules.DecideQueue {
		// Nothing changes; the answer holds the job and slot alone.
		res.Remaining = rules.QueueWait(running, r, st.now, born)
		return res
	}
	res.Marker = stored(m)
	if !d.Changes() {
		return res
	}
	st.setMarker(cur, res.Marker, fence != 0)
	if d == rules.DecideReplace {
		for _, old := range rules.Supersede(running, res.Marker, st.now) {
			was := old
			was.State = slotstore.StateRunning // as Supersede found it
			st.setMarker(&was, stored(old), false)
			res.Replaced = append(res.Replaced, old.Ref())
		}
	}
	return res
}

// marker returns the marker at key mk as the decision sees it, nil when
// the slot has none; false when it cannot be read (st.err says why).
func (st *step) marker(mk string) (*slotstore.Marker, bool) {
	e := st.get(mk)
	if !e.present {
		return nil, true
	}
	m, err := decodeMarker(e.value, e.mod, st.b.s.fenceBase.Load())
	if err != nil {
		st.fail(fmt.Errorf("%w (key %q)", err, mk))
		return nil, false
	}
	return &m, true
}

// born returns when job's generation began, beginning it now if it has
// none.
func (st *step) born(job string) time.Time {
	k := st.b.s.k.gen(job)
	e := st.get(k)
	if !e.present {
		st.put(k, encodeGen(st.now), false)
		return st.now.UTC()
	}
	born, err := decodeGen(e.value)
	if err != nil {
		st.fail(fmt.Errorf("%w (key %q)", err, k))
	}
	return born
}

// setMarker writes m, which was cur (nil for none), with its running copy
// and holder key: won says a claim just won it, whose holder key goes
// under the process lease.
func (st *step) setMarker(cur *slotstore.Marker, m slotstore.Marker, won bool) {
	k := st.b.s.k
	v := encodeMarker(m)
	st.put(k.marker(m.Job, m.Slot), v, false)
	if cur == nil {
		// The job's key lists it for History and Prune.
		if jk := k.job(m.Job); !st.get(jk).present {
			st.put(jk, nil, false)
		}
	}
	switch {
	case m.State == slotstore.StateRunning:
		st.put(k.run(m.Job, m.Slot), v, false)
	case cur != nil && cur.State == slotstore.StateRunning:
		st.del(k.run(m.Job, m.Slot))
	}
	switch {
	case won:
		st.put(k.holder(m.Job, m.Slot), encodeHolder(0), true)
	case cur != nil && cur.State == slotstore.StateRunning:
		st.del(k.holder(m.Job, m.Slot))
	}
}

// Skip implements slotstore.Store, batched as Claim is.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if !keyable(r.Slot) {
			return nil, fmt.Errorf("%w: skip %s: slot %s is outside the years 0001 to 9999", slotstore.ErrInvalid, r.Job, r.Slot)
		}
	}
	if err := s.begin(ctx, "skip"); err != nil {
		return nil, err
	}
	out := make([]slotstore.ClaimResult, len(reqs))
	b := s.newBatch(ctx, "skip")
	b.keysOf = func(i int) []string {
		r := reqs[i]
		if r.Spec != "" {
			return []string{s.k.marker(r.Job, r.Slot), s.k.spec(r.Job)}
		}
		return []string{s.k.marker(r.Job, r.Slot)}
	}
	err = b.run(len(reqs), func(i int, st *step) {
		r := reqs[i]
		if !st.specAllows(r.Job, r.Spec) {
			out[i] = rules.Superseded(r.Job, r.Slot)
			return
		}
		cur, ok := st.marker(s.k.marker(r.Job, r.Slot))
		if !ok {
			return
		}
		st.now = s.now() // after the marker, as in decideClaim
		m, res, changed := rules.ApplySkip(cur, r, p.Replica, st.now)
		res.Marker = stored(m)
		if changed {
			st.setMarker(nil, res.Marker, false)
		}
		out[i] = res
	}, func(i int, rev int64) {
		if out[i].Marker.Fence == pendingFence {
			out[i].Marker.Fence = s.fenceBase.Load() + rev
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
