// Package memstore is an in-process slotstore.Store. It keeps markers in a
// map guarded by one mutex, so it coordinates goroutines of one process only:
// use it for tests and for a single replica that needs no durability. Its
// clock is time.Now unless WithClock says otherwise, which makes it work
// inside testing/synctest bubbles.
package memstore

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.Store = (*Store)(nil)

type key struct {
	job  string
	slot int64 // Unix seconds
}

// Store is an in-memory slot store. Its zero value is not usable; call New.
type Store struct {
	now func() time.Time

	mu      sync.Mutex
	closed  bool
	markers map[key]slotstore.Marker
	fences  map[string]int64
}

// Option configures a Store.
type Option func(*Store)

// WithClock replaces time.Now as the store's clock.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, markers: make(map[key]slotstore.Marker), fences: make(map[string]int64)}
	for _, o := range opts {
		o(s)
	}
	return s
}

func keyOf(job string, slot time.Time) key { return key{job, slot.UTC().Unix()} }

// Claim implements slotstore.Store.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := slotstore.NormalizeAll(p.Requests)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, slotstore.ErrClosed
	}
	now := s.now()
	out := make([]slotstore.ClaimResult, len(reqs))
	for i, r := range reqs {
		k := keyOf(r.Job, r.Slot)
		cur, ok := s.markers[k]
		var curp *slotstore.Marker
		if ok {
			curp = &cur
		}
		d := slotstore.Decide(curp, r, now)
		var fence int64
		if d == slotstore.DecideWin {
			s.fences[r.Job]++
			fence = s.fences[r.Job]
		}
		m, res := slotstore.Apply(d, cur, r, p.Replica, fence, now)
		if d != slotstore.DecideLose {
			s.markers[k] = m
		}
		out[i] = res
	}
	return out, nil
}

// mutate applies change to the marker that ref names, if ref is its running
// claim; otherwise it returns ErrLeaseLost and changes nothing. Finish also
// accepts a marker already done under ref's fence.
func (s *Store) mutate(ref slotstore.Ref, finishing bool, change func(m *slotstore.Marker, now time.Time)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return slotstore.ErrClosed
	}
	k := keyOf(ref.Job, ref.Slot)
	m, ok := s.markers[k]
	if !ok || m.Fence != ref.Fence || (m.State != slotstore.StateRunning && !(m.State == slotstore.StateDone && finishing)) {
		return slotstore.ErrLeaseLost
	}
	change(&m, s.now())
	s.markers[k] = m
	return nil
}

// Renew implements slotstore.Store.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.mutate(p.Ref, false, func(m *slotstore.Marker, now time.Time) { m.LeaseEnd = now.Add(p.Lease) })
}

// Finish implements slotstore.Store.
func (s *Store) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.mutate(p.Ref, true, func(m *slotstore.Marker, now time.Time) {
		if m.State == slotstore.StateDone {
			return // already finished by this claim
		}
		m.State, m.Outcome, m.Error, m.Duration = slotstore.StateDone, p.Outcome, p.Error, p.Duration
		m.FinishedAt, m.LeaseEnd = now, now
	})
}

// Release implements slotstore.Store.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	return s.mutate(ref, false, func(m *slotstore.Marker, now time.Time) {
		m.State, m.LeaseEnd = slotstore.StateReleased, now
	})
}

// History implements slotstore.Store.
func (s *Store) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, slotstore.ErrClosed
	}
	var out []slotstore.Marker
	for _, m := range s.markers {
		if p.Matches(m) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Slot.Equal(out[j].Slot) {
			return out[i].Slot.After(out[j].Slot)
		}
		return out[i].Job < out[j].Job
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Prune implements slotstore.Store.
func (s *Store) Prune(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, slotstore.ErrClosed
	}
	now := s.now()
	n := 0
	for k, m := range s.markers {
		if m.Prunable(now) {
			delete(s.markers, k)
			n++
		}
	}
	return n, nil
}

// Close implements slotstore.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
