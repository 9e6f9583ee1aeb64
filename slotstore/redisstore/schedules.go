package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// A schedule held as data is a catalog entry (catalog.go) whose spec hash
// also holds run (the job it runs), ver (its version), seq (the sequence
// number of its last write) and del ('1' once deleted). The store-wide
// indexes of schedules (keys.go) share the hash tag {<prefix>sched}: the
// sorted sets of live IDs, of the live IDs of each run job, and of every
// ID by sequence number, the sequence counter, and a hash of each ID's
// version and run job as the indexes last recorded them.

// schedKey is the schedule index name: <prefix>sched:<name>{<prefix>sched}.
func (s *Store) schedKey(name string) string { return s.prefix + "sched:" + name + s.schedTag() }

// schedTag is the hash tag, braces included, of every schedule index.
func (s *Store) schedTag() string { return "{" + s.prefix + "sched}" }

// runKey is the index of the live schedules that run job run.
func (s *Store) runKey(run string) string { return s.schedKey("run:" + escape(run)) }

// schedChannel is the pub/sub channel of schedule writes (WatchSchedules).
func (s *Store) schedChannel() string { return s.prefix + "schedules" }

// WriteSchedules implements slotstore.Store. On a single server (or a
// Sentinel's master) a batch is one call of schedwrite.lua, which applies
// every write, each in its own step with the rule of Schedules held as
// data, keeps the indexes and the sequence counter in the same step and
// publishes a notice: one round trip. In a Cluster it is three pipelined
// rounds: schedwrite.lua a hash slot, then schedindex.lua on the indexes'
// hash slot with a ZADD to the catalog's index, then schedstamp.lua a hash
// slot (doc.go, under Schedules held as data, says what that does not
// guarantee).
func (s *Store) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	if err := rules.NormalizeWrites(p); err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "write schedules"); err != nil {
		return nil, err
	}
	ids := make([]string, len(p.Writes))
	for i, w := range p.Writes {
		ids[i] = w.ID
	}
	parts, calls := s.jobCalls(schedWriteScript, ids, func(k jobKeys) string { return k.spec },
		func(idx []int) []any { return s.writeArgs(p, idx) })
	op := fmt.Sprintf("write %d schedules", len(ids))
	res := make([]slotstore.ScheduleResult, len(ids))
	codes := make([]string, len(ids))
	for i, cmd := range s.runAll(ctx, calls) {
		out, err := cmd.Result()
		if err != nil {
			return nil, s.fail(op, err)
		}
		v, ok := out.([]any)
		if !ok {
			return nil, s.fail(op, fmt.Errorf("unexpected schedule script reply %T", out))
		}
		r := &reply{v: v}
		for _, at := range parts[i] {
			codes[at] = r.str()
			if e := r.entry(ids[at]); e != nil {
				res[at].Entry = *e
			}
		}
		if r.err == nil && r.i != len(v) {
			r.fail(fmt.Sprintf("%d values for %d writes", len(v), len(parts[i])))
		}
		if r.err != nil {
			return nil, s.fail(op, r.err)
		}
	}
	if !s.single {
		if err := s.indexApart(ctx, op, codes, res); err != nil {
			return nil, err
		}
	}
	for i, w := range p.Writes {
		res[i].Err = writeErr(codes[i], w, res[i].Entry)
	}
	return res, nil
}

// writeArgs are the arguments of schedwrite.lua for the writes of p at idx.
func (s *Store) writeArgs(p slotstore.WriteSchedulesParams, idx []int) []any {
	args := make([]any, 0, 5+6*len(idx))
	if s.single {
		args = append(args, p.By, s.prefix+"sched:", s.schedTag(), catalogKey(s.prefix), s.schedChannel())
	} else {
		args = append(args, p.By, "", "", "", "")
	}
	for _, at := range idx {
		w := p.Writes[at]
		del := ""
		if w.Delete {
			del = "1"
		}
		args = append(args, w.ID, del, w.Run, w.Spec.Fingerprint, w.Spec.Body, strconv.FormatInt(w.IfVersion, 10))
	}
	return args
}

// writeErr is the error of a write that schedwrite.lua answered code,
// with e the entry it left.
func writeErr(code string, w slotstore.ScheduleWrite, e slotstore.CatalogEntry) error {
	switch code {
	case "ok", "same":
		return nil
	case "notsched":
		return fmt.Errorf("redisstore: write schedule %s: %w", w.ID, slotstore.ErrNotSchedule)
	case "nosched":
		return fmt.Errorf("redisstore: delete schedule %s: %w", w.ID, slotstore.ErrNoSchedule)
	case "mismatch":
		have := e.Version
		if e.Deleted || e.Run == "" {
			have = 0
		}
		return fmt.Errorf("redisstore: write schedule %s: %w: it is at version %d, not %d", w.ID, slotstore.ErrVersionMismatch,
			have, w.IfVersion)
	}
	return fmt.Errorf("redisstore: write schedule %s: unexpected outcome %q", w.ID, code)
}

// indexApart records, in a Cluster, the writes of a batch in the schedule
// indexes, which live apart from the jobs: every write that left a
// schedule, changed or not, so that a batch retried after a failure
// between the rounds indexes what the first try wrote (schedindex.lua
// ignores a version it holds). The schedules changed by the batch join the
// catalog's index in the same pipeline; then each entry gets its sequence
// number (schedstamp.lua), and res the same.
func (s *Store) indexApart(ctx context.Context, op string, codes []string, res []slotstore.ScheduleResult) error {
	args := []any{s.prefix + "sched:", s.schedTag(), s.schedChannel()}
	var idx []int
	zadd := []any{"zadd", catalogKey(s.prefix)}
	for i, r := range res {
		if r.Entry.Run == "" {
			continue
		}
		run := r.Entry.Run
		if r.Entry.Deleted {
			run = ""
		}
		idx = append(idx, i)
		args = append(args, r.Entry.Job, strconv.FormatInt(r.Entry.Version, 10), run)
		if codes[i] == "ok" {
			zadd = append(zadd, 0, r.Entry.Job)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	var extra []redis.Cmder
	if len(zadd) > 2 {
		extra = append(extra, redis.NewIntCmd(ctx, zadd...))
	}
	calls := []call{{script: schedIndexScript, keys: []string{s.schedKey("head")}, args: args}}
	cmd := s.runAll(ctx, calls, extra...)[0]
	seqs, err := cmd.Int64Slice()
	if err == nil && len(seqs) != len(idx) {
		err = fmt.Errorf("index script answered %d sequence numbers for %d writes", len(seqs), len(idx))
	}
	if err != nil {
		return s.fail(op+": index", err)
	}
	for _, e := range extra {
		if err := e.Err(); err != nil {
			return s.fail(op+": index the catalog", err)
		}
	}
	var stamp []int
	for j, i := range idx {
		if seqs[j] > res[i].Entry.Seq {
			res[i].Entry.Seq = seqs[j]
			stamp = append(stamp, i)
		}
	}
	return s.stamp(ctx, op, stamp, res)
}

// stamp writes the sequence numbers of res at idx into their entries.
func (s *Store) stamp(ctx context.Context, op string, idx []int, res []slotstore.ScheduleResult) error {
	if len(idx) == 0 {
		return nil
	}
	ids := make([]string, len(idx))
	for j, i := range idx {
		ids[j] = res[i].Entry.Job
	}
	_, calls := s.jobCalls(schedStampScript, ids, func(k jobKeys) string { return k.spec }, func(part []int) []any {
		args := make([]any, len(part))
		for j, at := range part {
			args[j] = res[idx[at]].Entry.Seq
		}
		return args
	})
	for _, cmd := range s.runAll(ctx, calls) {
		if err := cmd.Err(); err != nil {
			return s.fail(op+": stamp sequence numbers", err)
		}
	}
	return nil
}
