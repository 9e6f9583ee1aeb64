package etcdstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
)

// defaultLimit is the number of markers History returns when
// HistoryParams.Limit is zero.
const defaultLimit = 100

// historyPage is how many markers one read of a job's markers returns
// when History filters them by a state other than running.
const historyPage = 500

// History implements slotstore.Store. The markers of one job are a range
// of keys sorted by slot: History of a job reads its newest keys before
// p.Before, and no more than p.Limit of them unless it filters by state.
// Running markers are read from their copies, a range of their own. The
// markers of every job are the jobs' ranges read in one transaction (a few
// for many jobs) and merged, newest slot first, then by job; filtered by a
// state (the engine's scan of retrying markers once a minute, history
// --state), they are read in rounds, many jobs a transaction
// (stateHistory).
func (s *Store) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	if err := s.begin(ctx, "history"); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	var out []slotstore.Marker
	var err error
	switch {
	case p.State == slotstore.StateRunning:
		out, err = s.runningHistory(ctx, p.Job)
	case p.Job != "":
		out, err = s.jobHistory(ctx, p.Job, p.State, p.Before, limit)
	default:
		out, err = s.allHistory(ctx, p.State, p.Before, limit)
	}
	if err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(m slotstore.Marker) bool {
		return !p.Before.IsZero() && !m.Slot.Before(p.Before) || p.State != "" && m.State != p.State
	})
	slices.SortStableFunc(out, newestFirst)
	if len(out) > limit {
		out = out[:limit]
	}
	if out == nil {
		out = []slotstore.Marker{}
	}
	return out, nil
}

// newestFirst orders markers newest slot first, then by job.
func newestFirst(a, b slotstore.Marker) int {
	if c := b.Slot.Compare(a.Slot); c != 0 {
		return c
	}
	return cmp.Compare(a.Job, b.Job)
}

// endKey is the key that ends a job's markers before before: the slot of
// before rounded up to the second, so a slot earlier than a before within
// its second is kept.
func (s *Store) endKey(job string, before time.Time) string {
	if before.IsZero() {
		return clientv3.GetPrefixRangeEnd(s.k.markers(job))
	}
	b := before.UTC()
	if t := b.Truncate(time.Second); t.Before(b) {
		b = t.Add(time.Second)
	}
	if !keyable(b) {
		if b.Year() < 1 {
			return s.k.markers(job)
		}
		return clientv3.GetPrefixRangeEnd(s.k.markers(job))
	}
	return s.k.marker(job, b)
}

// jobOp returns the read of up to n of job's markers before before,
// newest first.
func (s *Store) jobOp(job string, before time.Time, n int) clientv3.Op {
	return clientv3.OpGet(s.k.markers(job), clientv3.WithRange(s.endKey(job, before)),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(int64(n)))
}

// jobHistory returns job's markers before before, newest first, at least
// limit of those in state (any state when empty) if it has them.
func (s *Store) jobHistory(ctx context.Context, job string, state slotstore.State, before time.Time, limit int) ([]slotstore.Marker, error) {
	var out []slotstore.Marker
	for {
		n := limit
		if state != "" {
			n = max(limit, historyPage)
		}
		resp, err := s.read(ctx, "history", s.jobOp(job, before, n))
		if err != nil {
			return nil, err
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		for _, kv := range kvs {
			m, err := markerOf(kv, s.fenceBase.Load())
			if err != nil {
				return nil, s.failRead("history", err)
			}
			if state == "" || m.State == state {
				out = append(out, m)
			}
		}
		if state == "" || len(out) >= limit || len(kvs) < n {
			return out, nil
		}
		// The next page ends where this one did.
		if before, err = slotOf(string(kvs[len(kvs)-1].Key)); err != nil {
			return nil, s.failRead("history", err)
		}
	}
}

// allHistory returns the markers of every job before before, newest
// first: at least limit of them in state if there are.
func (s *Store) allHistory(ctx context.Context, state slotstore.State, before time.Time, limit int) ([]slotstore.Marker, error) {
	jobs, err := s.jobs(ctx, "history")
	if err != nil {
		return nil, err
	}
	if state != "" {
		return s.stateHistory(ctx, jobs, state, before, limit)
	}
	var out []slotstore.Marker
	for len(jobs) > 0 {
		n := min(len(jobs), s.maxOps)
		ops := make([]clientv3.Op, n)
		for i, j := range jobs[:n] {
			ops[i] = s.jobOp(j, before, limit)
		}
		resp, err := s.read(ctx, "history", ops...)
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().GetKvs() {
				m, err := markerOf(kv, s.fenceBase.Load())
				if err != nil {
					return nil, s.failRead("history", err)
				}
				out = append(out, m)
			}
		}
		jobs = jobs[n:]
	}
	return out, nil
}

// stateBudget is about how many markers one read of the markers of many
// jobs filtered by a state returns: the jobs of the read share it, each
// read at least stateFloor of.
const (
	stateBudget = 2000
	stateFloor  = 16
)

// stateHistory returns the markers in state of jobs before before: of
// each job, at least the newest limit of those if it has them. It reads
// the jobs' markers back from before in rounds, each job a page a round
// until it has limit in state or has none left, the jobs of a round
// sharing transactions, MaxTxnOps and stateBudget markers each: a page is
// stateBudget shared by the jobs still reading, at least stateFloor
// markers and at most as many as a job's own History reads (jobHistory).
func (s *Store) stateHistory(ctx context.Context, jobs []string, state slotstore.State, before time.Time,
	limit int) ([]slotstore.Marker, error) {
	type walk struct {
		job    string
		before time.Time
		found  int
	}
	todo := make([]walk, len(jobs))
	for i, j := range jobs {
		todo[i] = walk{job: j, before: before}
	}
	var out []slotstore.Marker
	for len(todo) > 0 {
		n := min(max(limit, historyPage), max(stateBudget/len(todo), stateFloor))
		per := min(s.maxOps, max(stateBudget/n, 1))
		var next []walk
		for len(todo) > 0 {
			batch := todo[:min(len(todo), per)]
			todo = todo[len(batch):]
			ops := make([]clientv3.Op, len(batch))
			for i, w := range batch {
				ops[i] = s.jobOp(w.job, w.before, n)
			}
			resp, err := s.read(ctx, "history", ops...)
			if err != nil {
				return nil, err
			}
			for i, r := range resp.Responses {
				w, kvs := batch[i], r.GetResponseRange().GetKvs()
				for _, kv := range kvs {
					m, err := markerOf(kv, s.fenceBase.Load())
					if err != nil {
						return nil, s.failRead("history", err)
					}
					if m.State == state {
						out = append(out, m)
						w.found++
					}
				}
				if w.found >= limit || len(kvs) < n {
					continue
				}
				// The job's next page ends where this one did.
				if w.before, err = slotOf(string(kvs[len(kvs)-1].Key)); err != nil {
					return nil, s.failRead("history", err)
				}
				next = append(next, w)
			}
		}
		todo = next
	}
	return out, nil
}

// runningHistory returns the running markers of job, or of every job when
// job is empty, from their copies.
func (s *Store) runningHistory(ctx context.Context, job string) ([]slotstore.Marker, error) {
	prefix := s.k.runningDir()
	if job != "" {
		prefix = s.k.running(job)
	}
	resp, err := s.get(ctx, "history", prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make([]slotstore.Marker, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m, err := markerOf(kv, s.fenceBase.Load())
		if err != nil {
			return nil, s.failRead("history", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// jobs returns every job that has had a marker (the job keys).
func (s *Store) jobs(ctx context.Context, op string) ([]string, error) {
	return s.jobsUnder(ctx, op, dirJobs)
}

// jobsUnder returns, sorted, the jobs that have a key under dir (dirJobs,
// dirCatalog), reading the keys only.
func (s *Store) jobsUnder(ctx context.Context, op, dir string) ([]string, error) {
	resp, err := s.get(ctx, op, s.k.prefix+dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		j, err := s.k.jobOf(dir, string(kv.Key))
		if err != nil {
			return nil, s.failRead(op, err)
		}
		out = append(out, j)
	}
	slices.SortFunc(out, strings.Compare)
	return out, nil
}
