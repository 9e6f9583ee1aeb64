package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// defaultLimit is the number of markers History returns when
	// HistoryParams.Limit is zero.
	defaultLimit = 100
	// scanStep caps the index entries one history or prune call looks at,
	// so that no call keeps Redis busy for long.
	scanStep = 1000
)

// History implements slotstore.Store. History of one job is one script call
// that walks the job's slot index newest first, or its index of running
// markers when State is running; a filter by another state, or a job with
// many markers Redis has expired, may take further calls of 1,000 entries
// each. History of every job first reads the set of job names, then asks
// every job for its newest Limit markers, all jobs in one pipeline a round,
// and merges them.
func (s *Store) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	if err := s.begin(ctx, "history"); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	// Before bounds every walk from its start: slots below its second,
	// rounded up (a slot is a whole second).
	var before int64
	if !p.Before.IsZero() {
		before = p.Before.Unix()
		if p.Before.Truncate(time.Second).Before(p.Before) {
			before++
		}
	}
	if live := s.liveKey(); p.Job == "" && live != "" &&
		(p.State == slotstore.StateRunning || p.State == slotstore.StateRetrying) {
		return s.liveHistory(ctx, live, p.State, limit, before)
	}
	jobs := []string{p.Job}
	if p.Job == "" {
		var err error
		if jobs, err = s.client.SMembers(ctx, jobsKey(s.prefix)).Result(); err != nil {
			return nil, s.failRead("history: list jobs", err)
		}
		sort.Strings(jobs)
	}
	found := make([][]slotstore.Marker, len(jobs))
	below := make([]string, len(jobs)) // where each job's walk goes on
	todo := make([]int, len(jobs))     // jobs whose walk is not over
	for i := range todo {
		todo[i] = i
		if before != 0 {
			below[i] = strconv.FormatInt(before, 10)
		}
	}
	for len(todo) > 0 {
		calls := make([]call, len(todo))
		for c, i := range todo {
			calls[c] = s.historyCall(jobs[i], p.State, limit-len(found[i]), below[i])
		}
		var next []int
		for c, cmd := range s.runAll(ctx, calls) {
			i := todo[c]
			res, err := cmd.Result()
			if err != nil {
				return nil, s.failRead("history of "+jobs[i], err)
			}
			ms, cursor, err := readHistory(jobs[i], res)
			if err != nil {
				return nil, s.failRead("history of "+jobs[i], err)
			}
			found[i] = append(found[i], ms...)
			below[i] = cursor
			if cursor != "" && len(found[i]) < limit {
				next = append(next, i)
			}
		}
		todo = next
	}
	// Newest slot first, then by job: each job's list is newest first and
	// jobs are in name order, so a stable sort by slot does it.
	out := slices.Concat(found...)
	slices.SortStableFunc(out, func(a, b slotstore.Marker) int { return b.Slot.Compare(a.Slot) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// liveHistory lists the markers of every job in state, running or
// retrying, from the store's live index: one script call per 1,000 live
// markers, newest slot first, until limit are found and no other shares the
// slot of the last, whatever the number of jobs and of other markers.
func (s *Store) liveHistory(ctx context.Context, live string, state slotstore.State, limit int,
	before int64) ([]slotstore.Marker, error) {
	var out []slotstore.Marker
	below := ""
	if before != 0 {
		below = fmt.Sprintf("%011d", before) // entries of earlier slots sort below it
	}
	for {
		c := call{script: liveScript, keys: []string{live}, args: []any{string(state), below, scanStep, len(s.prefix)}}
		res, err := s.runAll(ctx, []call{c})[0].Result()
		if err != nil {
			return nil, s.failRead("history of live markers", err)
		}
		ms, cursor, err := s.readLive(res)
		if err != nil {
			return nil, s.failRead("history of live markers", err)
		}
		out = append(out, ms...)
		if cursor == "" {
			break
		}
		below = cursor
		// Entries come newest slot first: once limit are found, only
		// entries of the same slot as the last of them may still belong.
		if len(out) >= limit && cursor < fmt.Sprintf("%011d", out[limit-1].Slot.Unix()) {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b slotstore.Marker) int {
		if c := b.Slot.Compare(a.Slot); c != 0 {
			return c
		}
		return strings.Compare(a.Job, b.Job)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// readLive reads live.lua's reply: the markers and the entry to go on
// below ("" when the walk is over).
func (s *Store) readLive(res any) ([]slotstore.Marker, string, error) {
	v, ok := res.([]any)
	if !ok || len(v) == 0 {
		return nil, "", fmt.Errorf("unexpected live script reply %T", res)
	}
	cursor, ok := v[0].(string)
	if !ok {
		return nil, "", fmt.Errorf("unexpected live script cursor %T", v[0])
	}
	r, n, err := newReply(v[1:], 1+markerFields)
	if err != nil {
		return nil, "", err
	}
	ms := make([]slotstore.Marker, 0, n)
	for range n {
		key := r.str()
		job, slot, ok := s.parseMarkerKey(key)
		if !ok {
			r.fail("marker key " + key)
		}
		ms = append(ms, r.marker(job, slot))
	}
	return ms, cursor, r.err
}

// historyCall builds the history.lua call that lists up to want markers of
// job in state (any when empty) below the slot below (from the newest when
// empty).
func (s *Store) historyCall(job string, state slotstore.State, want int, below string) call {
	k := keysOf(s.prefix, job)
	index := k.slots
	if state == slotstore.StateRunning {
		index = k.running
	}
	return call{
		script: historyScript,
		keys:   []string{index, k.slots, k.expiry, k.running, k.pruned},
		args:   []any{k.marker, want, string(state), below, scanStep, s.liveKey()},
	}
}

// readHistory reads history.lua's reply: the markers of job and the slot to
// go on below ("" when the walk is over).
func readHistory(job string, res any) ([]slotstore.Marker, string, error) {
	v, ok := res.([]any)
	if !ok || len(v) == 0 {
		return nil, "", fmt.Errorf("unexpected history script reply %T", res)
	}
	cursor, ok := v[0].(string)
	if !ok {
		return nil, "", fmt.Errorf("unexpected history script cursor %T", v[0])
	}
	r, n, err := newReply(v[1:], 1+markerFields)
	if err != nil {
		return nil, "", err
	}
	ms := make([]slotstore.Marker, 0, n)
	for range n {
		slot, err := strconv.ParseInt(r.str(), 10, 64)
		if err != nil {
			r.fail(err.Error())
		}
		ms = append(ms, r.marker(job, slot))
	}
	return ms, cursor, r.err
}

// Prune implements slotstore.Store. Redis itself deletes a marker when its
// retention and its lease have both ended (PEXPIREAT); Prune removes the
// index entries of those markers, deletes any marker the contract allows
// that Redis has not yet, and counts both, together with the entries History
// found gone since the last Prune. It reads the set of job names, then runs
// one script call per job, pipelined, for each thousand entries due; then
// it deletes the entries of the actions log past their retention
// (actions.go).
func (s *Store) Prune(ctx context.Context) (int, error) {
	if err := s.begin(ctx, "prune"); err != nil {
		return 0, err
	}
	jobs, err := s.client.SMembers(ctx, jobsKey(s.prefix)).Result()
	if err != nil {
		return 0, s.failRead("prune: list jobs", err)
	}
	total := 0
	for len(jobs) > 0 {
		calls := make([]call, len(jobs))
		for i, job := range jobs {
			k := keysOf(s.prefix, job)
			keys := []string{k.slots, k.expiry, k.running, k.pruned}
			if s.single {
				keys = append(keys, jobsKey(s.prefix))
			}
			calls[i] = call{script: pruneScript, keys: keys, args: []any{k.marker, scanStep, job, s.liveKey()}}
		}
		var more []string
		for i, cmd := range s.runAll(ctx, calls) {
			res, err := cmd.Result()
			if err == nil {
				var r *reply
				if r, _, err = newReply(res, 2); err == nil {
					total += int(r.int())
					if r.int() >= scanStep {
						more = append(more, jobs[i])
					}
					err = r.err
				}
			}
			if err != nil {
				return total, s.fail("prune "+jobs[i], err)
			}
		}
		jobs = more
	}
	n, err := s.pruneActions(ctx)
	return total + n, err
}
