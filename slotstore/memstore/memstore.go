// Package memstore is an in-process slotstore.Store. It keeps markers in a
// map guarded by one mutex, so it coordinates goroutines of one process only:
// use it for tests and for a single replica that needs no durability. Its
// clock is time.Now unless Options.Clock says otherwise; time.Now makes it
// work inside testing/synctest bubbles. New makes one; it holds no
// connection, so it takes no context (slotstore's package documentation,
// under Constructors). Its actions log is a slice in Seq order: an append
// adds to its end, a page of Actions is a binary search for Before and a
// walk back over the entries it lists or its filters pass over, and Prune
// walks every entry.
package memstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
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
	// jobSlots indexes the markers by job, for a job's history.
	jobSlots map[string]map[int64]struct{}
	running  map[string]map[int64]bool // job -> slots (Unix seconds) in state running
	retry    map[key]bool              // slots in state retrying
	newest   map[string]int64          // job -> its newest marker's slot (Unix seconds)
	fences   map[string]int64
	born     map[string]time.Time              // job -> when its generation began
	since    time.Time                         // Options.Since
	pauses   map[string]slotstore.PauseNote    // job -> its pause; "" is the whole cluster
	beats    map[string]slotstore.Replica      // replica -> its last beat
	catalog  map[string]slotstore.CatalogEntry // job -> its catalog entry (catalog.go)
	seq      int64                             // the newest schedule write's sequence number
	// seqLog is every schedule write, in order (schedules.go).
	seqLog []seqRec
	// names are the catalog's names, sorted, for Schedules; nil when a
	// name was added since (schedules.go).
	names []string
	// watchers are the channels of WatchSchedules (schedules.go).
	watchers map[chan struct{}]struct{}
	// actions is the actions log, in Seq order, and actionSeq the newest
	// entry's Seq (actions.go).
	actions   []slotstore.Action
	actionSeq int64
}

// Options configures New. The zero value of every field means its
// default, so memstore.New(memstore.Options{}) is a store on time.Now.
type Options struct {
	// Clock replaces time.Now as the store's clock; nil means time.Now.
	Clock func() time.Time
	// Since, when set, is when the store's record of every job began, for
	// a job it has not seen before, if that is earlier than its first
	// enrolment or claim: the store behaves as one that has recorded every
	// job since then would (slotstore.Generation.Born), so a test that
	// starts a replica at a slot's instant has that slot run rather than
	// skipped as older than the store's record of the job. Zero means the
	// store's time at the job's first enrolment or claim. A loss (Lose)
	// forgets it.
	Since time.Time
}

// New returns an empty store.
func New(o Options) *Store {
	now := o.Clock
	if now == nil {
		now = time.Now
	}
	return &Store{
		now: now, markers: make(map[key]slotstore.Marker), jobSlots: make(map[string]map[int64]struct{}),
		running: make(map[string]map[int64]bool),
		retry:   make(map[key]bool), newest: make(map[string]int64),
		fences: make(map[string]int64), born: make(map[string]time.Time), since: o.Since,
		pauses: make(map[string]slotstore.PauseNote), beats: make(map[string]slotstore.Replica),
		catalog: make(map[string]slotstore.CatalogEntry), watchers: make(map[chan struct{}]struct{}),
	}
}

func keyOf(job string, slot time.Time) key { return key{job, slot.UTC().Unix()} }

// put stores m and keeps the index of running slots up to date.
func (s *Store) put(m slotstore.Marker) {
	k := keyOf(m.Job, m.Slot)
	if _, had := s.markers[k]; !had {
		if s.jobSlots[k.job] == nil {
			s.jobSlots[k.job] = make(map[int64]struct{})
		}
		s.jobSlots[k.job][k.slot] = struct{}{}
	}
	s.markers[k] = m
	if n, ok := s.newest[k.job]; !ok || k.slot > n {
		s.newest[k.job] = k.slot
	}
	if m.State == slotstore.StateRetrying {
		s.retry[k] = true
	} else {
		delete(s.retry, k)
	}
	if m.State == slotstore.StateRunning {
		if s.running[m.Job] == nil {
			s.running[m.Job] = make(map[int64]bool)
		}
		s.running[m.Job][k.slot] = true
	} else {
		s.drop(k)
	}
}

// drop removes k from the index of running slots. A job's set is kept when
// it empties, as its next run would make it again; Prune drops empty ones.
func (s *Store) drop(k key) {
	delete(s.running[k.job], k.slot)
}

// bornOf returns when job's generation began, beginning it at now (or
// Options.Since) if it has none.
func (s *Store) bornOf(job string, now time.Time) time.Time {
	b, ok := s.born[job]
	if !ok {
		b = now
		if !s.since.IsZero() && s.since.Before(now) {
			b = s.since
		}
		s.born[job] = b
	}
	return b
}

// Enroll implements slotstore.Store. A memory store never loses what it
// knows while it lives, so a job's generation begins once.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeEnroll(p)
	if err != nil {
		return nil, err
	}
	unlock, now, err := s.lock(ctx, "enroll")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make([]slotstore.Generation, len(jobs))
	for i, j := range jobs {
		out[i] = slotstore.Generation{Job: j, Born: s.bornOf(j, now)}
		if n, ok := s.newest[j]; ok {
			out[i].Newest = time.Unix(n, 0).UTC()
		}
		if p.Specs != nil {
			s.offer(j, p.Specs[i], p.Replica, now)
		}
		out[i].Spec = s.catalog[j].InForce
	}
	return out, nil
}

// lock takes the store's mutex for op, a batch, at the store's time now,
// unless ctx is done or the store closed.
func (s *Store) lock(ctx context.Context, op string) (unlock func(), now time.Time, err error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("memstore: %s: %w", op, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, time.Time{}, fmt.Errorf("memstore: %s: %w", op, slotstore.ErrClosed)
	}
	return s.mu.Unlock, s.now(), nil
}

// runningOf returns the markers of job's running slots.
func (s *Store) runningOf(job string) []slotstore.Marker {
	var out []slotstore.Marker
	for slot := range s.running[job] {
		out = append(out, s.markers[key{job, slot}])
	}
	return out
}

// Claim implements slotstore.Store.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeClaims(p.Requests)
	if err != nil {
		return nil, err
	}
	unlock, now, err := s.lock(ctx, "claim")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make([]slotstore.ClaimResult, len(reqs))
	for i, r := range reqs {
		if !rules.SpecAllows(s.catalog[r.Job].InForce.Fingerprint, r.Spec) {
			out[i] = rules.Superseded(r.Job, r.Slot)
			continue
		}
		cur, ok := s.markers[keyOf(r.Job, r.Slot)]
		var (
			curp    *slotstore.Marker
			running []slotstore.Marker
		)
		if ok {
			curp = &cur
		}
		if rules.ReadsRunning(curp, rules.Effective(r, now)) {
			running = s.runningOf(r.Job)
		}
		born := s.bornOf(r.Job, now)
		d := rules.Decide(curp, r, now, born, running)
		var fence int64
		if d == rules.DecideWin || d == rules.DecideReplace {
			s.fences[r.Job]++
			fence = s.fences[r.Job]
		}
		m, res := rules.Apply(d, cur, r, p.Replica, p.Incarnation, fence, now)
		if d.Changes() {
			s.put(m)
		}
		if d == rules.DecideReplace {
			for _, old := range rules.Supersede(running, m, now) {
				s.put(old)
				res.Replaced = append(res.Replaced, old.Ref())
			}
		}
		if d == rules.DecideQueue {
			res.Remaining = rules.QueueWait(running, r, now, born)
		}
		out[i] = res
	}
	return rules.Answered(out, s.now()), nil
}

// Skip implements slotstore.Store.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	unlock, now, err := s.lock(ctx, "skip")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make([]slotstore.ClaimResult, len(reqs))
	for i, r := range reqs {
		if !rules.SpecAllows(s.catalog[r.Job].InForce.Fingerprint, r.Spec) {
			out[i] = rules.Superseded(r.Job, r.Slot)
			continue
		}
		var curp *slotstore.Marker
		if cur, ok := s.markers[keyOf(r.Job, r.Slot)]; ok {
			curp = &cur
		}
		m, res, changed := rules.ApplySkip(curp, r, p.Replica, now)
		if changed {
			s.put(m)
		}
		out[i] = res
	}
	return out, nil
}

// mutate applies change to the marker that ref names, if ref is its running
// claim; otherwise it returns ErrLeaseLost and changes nothing. A marker
// already done or retrying under ref's fence is accepted by Finish and
// answered ErrFinished by Renew.
func (s *Store) mutate(ref slotstore.Ref, op string, change func(m *slotstore.Marker, now time.Time)) error {
	fail := func(err error) error {
		return fmt.Errorf("memstore: %s %s@%s fence %d: %w", op, ref.Job, ref.Slot.UTC().Format(time.RFC3339), ref.Fence, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fail(slotstore.ErrClosed)
	}
	m, ok := s.markers[keyOf(ref.Job, ref.Slot)]
	if !ok || m.Fence != ref.Fence {
		return fail(slotstore.ErrLeaseLost)
	}
	if settled := m.State == slotstore.StateDone || m.State == slotstore.StateRetrying; m.State != slotstore.StateRunning {
		switch {
		case settled && op == "renew":
			return fail(slotstore.ErrFinished)
		case !settled || op != "finish":
			return fail(slotstore.ErrLeaseLost)
		}
	}
	change(&m, s.now())
	s.put(m)
	return nil
}

// Renew implements slotstore.Store.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := rules.ValidateRenew(p); err != nil {
		return err
	}
	return s.mutate(p.Ref, "renew", func(m *slotstore.Marker, now time.Time) { m.LeaseEnd = now.Add(p.Lease) })
}

// Finish implements slotstore.Store.
func (s *Store) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if err := rules.ValidateFinish(p); err != nil {
		return err
	}
	return s.mutate(p.Ref, "finish", func(m *slotstore.Marker, now time.Time) {
		if m.State != slotstore.StateRunning {
			return // already finished by this claim
		}
		m.State, m.Outcome, m.Error, m.Duration = slotstore.StateDone, p.Outcome, p.Error, p.Duration
		m.FinishedAt, m.LeaseEnd = now, now
		if !p.RetryAt.IsZero() {
			m.State, m.LeaseEnd = slotstore.StateRetrying, p.RetryAt
		}
	})
}

// Release implements slotstore.Store.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := rules.ValidateRef(ref); err != nil {
		return err
	}
	return s.mutate(ref, "release", func(m *slotstore.Marker, now time.Time) {
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
		return nil, fmt.Errorf("memstore: history: %w", slotstore.ErrClosed)
	}
	var out []slotstore.Marker
	switch p.State {
	case slotstore.StateRunning: // from the index, not a walk of every marker
		for job, slots := range s.running {
			for slot := range slots {
				if m := s.markers[key{job, slot}]; rules.Matches(p, m) {
					out = append(out, m)
				}
			}
		}
	case slotstore.StateRetrying:
		for k := range s.retry {
			if m := s.markers[k]; rules.Matches(p, m) {
				out = append(out, m)
			}
		}
	case "":
		if p.Job != "" { // from the job's own slots, not a walk of every marker
			for slot := range s.jobSlots[p.Job] {
				if m := s.markers[key{p.Job, slot}]; rules.Matches(p, m) {
					out = append(out, m)
				}
			}
			break
		}
		fallthrough
	default:
		for _, m := range s.markers {
			if rules.Matches(p, m) {
				out = append(out, m)
			}
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
		return 0, fmt.Errorf("memstore: prune: %w", slotstore.ErrClosed)
	}
	now := s.now()
	n := 0
	stale := map[string]bool{} // jobs whose newest marker went
	for k, m := range s.markers {
		if rules.Prunable(m, now) {
			delete(s.markers, k)
			if delete(s.jobSlots[k.job], k.slot); len(s.jobSlots[k.job]) == 0 {
				delete(s.jobSlots, k.job)
			}
			delete(s.retry, k)
			s.drop(k)
			if s.newest[k.job] == k.slot {
				delete(s.newest, k.job)
				stale[k.job] = true
			}
			n++
		}
	}
	for k := range s.markers {
		if cur, ok := s.newest[k.job]; stale[k.job] && (!ok || k.slot > cur) {
			s.newest[k.job] = k.slot
		}
	}
	for job, slots := range s.running {
		if len(slots) == 0 {
			delete(s.running, job) // kept between runs; not for a job that stopped
		}
	}
	s.pruneBeats(now)
	return n + s.pruneActions(now), nil
}

// Close implements slotstore.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Lose drops every marker and every job's generation, as a store that
// restarted without its data would have lost them, for tests of what a
// loss does: the next claim or enrolment of each job begins its generation
// anew. Fences still grow across it, as every store's do; the pauses, the
// catalog, the schedules and the actions log stay.
func (s *Store) Lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.markers)
	clear(s.jobSlots)
	clear(s.running)
	clear(s.retry)
	clear(s.newest)
	clear(s.born)
	s.since = time.Time{}
}
