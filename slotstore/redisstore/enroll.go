package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// A job's generation is the key <prefix>{job}:gen, when it began in Unix
// milliseconds by Redis's clock. It has no expiry and nothing deletes it,
// so it is gone only when Redis lost the job's data: then the next Enroll
// or claim begins a new generation, and claims no longer create the first
// marker of a slot it does not cover: one from before it, or less than
// slotstore.ClaimLead after it began (claim.lua). It lives under the job's
// hash tag, so in a Cluster each job's generation is lost with its own
// markers, on its own master, and the claim script reads it in the call
// that claims.

// Enroll implements slotstore.Store: one script call, or in a Cluster one
// per hash slot, all pipelined. The call also reads each job's newest marker
// from its slot index (Generation.Newest), removing the entries of markers
// Redis has expired that it meets; a job whose newest thousand entries are
// all gone is read again by History, one more round trip in that rare case.
// With p.Specs, the script offers each job's spec to the catalog in the
// same call (the rule of rules.Offer, in Lua); with or without, it answers
// the spec in force. In a Cluster a ZADD in the same pipeline adds the
// jobs to the catalog's index.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeEnroll(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "enroll"); err != nil {
		return nil, err
	}
	out := make([]slotstore.Generation, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	parts, calls := s.jobCalls(enrollScript, jobs, func(k jobKeys) string { return k.gen },
		func(idx []int) []any { return s.enrollArgs(p, idx) })
	var extra []redis.Cmder
	if p.Specs != nil && !s.single {
		extra = append(extra, s.indexCmd(ctx, jobs))
	}
	op := fmt.Sprintf("enroll %d jobs", len(jobs))
	var unsure []int // jobs whose newest marker the script could not tell
	for i, cmd := range s.runAll(ctx, calls, extra...) {
		res, err := cmd.Result()
		if err != nil {
			return nil, s.fail(op, err)
		}
		r, n, err := newReply(res, 7)
		if err != nil || n != len(parts[i]) {
			return nil, s.fail(op, fmt.Errorf("enroll script answered %v for %d jobs", res, len(parts[i])))
		}
		for _, at := range parts[i] {
			out[at] = slotstore.Generation{Job: jobs[at], Born: r.millis()}
			switch newest := r.str(); newest {
			case "":
			case "?":
				unsure = append(unsure, at)
			default:
				slot, err := strconv.ParseInt(newest, 10, 64)
				if err != nil {
					r.fail("newest slot " + newest)
				}
				out[at].Newest = time.Unix(slot, 0).UTC()
			}
			out[at].Spec = r.spec()
		}
		if r.err != nil {
			return nil, s.fail(op, r.err)
		}
	}
	for _, e := range extra {
		if err := e.Err(); err != nil {
			return nil, s.fail(op+": index the catalog", err)
		}
	}
	for _, at := range unsure {
		ms, err := s.History(ctx, slotstore.HistoryParams{Job: jobs[at], Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("redisstore: %s: newest marker of %s: %w", op, jobs[at], err)
		}
		if len(ms) > 0 {
			out[at].Newest = ms[0].Slot
		}
	}
	return out, nil
}

// enrollArgs are the arguments of enroll.lua for the jobs of p at idx.
func (s *Store) enrollArgs(p slotstore.EnrollParams, idx []int) []any {
	catalog := ""
	if s.single {
		catalog = catalogKey(s.prefix)
	}
	if p.Specs == nil {
		return []any{s.liveKey(), catalog, ""}
	}
	args := make([]any, 0, 3+5*len(idx))
	args = append(args, s.liveKey(), catalog, p.Replica)
	for _, at := range idx {
		sp := p.Specs[at]
		args = append(args, p.Jobs[at], sp.Fingerprint, sp.Body, strconv.FormatInt(sp.Revision, 10), sp.Supersedes)
	}
	return args
}

// indexCmd adds jobs to the catalog's index, which in a Cluster lives apart
// from them.
func (s *Store) indexCmd(ctx context.Context, jobs []string) redis.Cmder {
	args := make([]any, 0, 2+2*len(jobs))
	args = append(args, "zadd", catalogKey(s.prefix))
	for _, j := range jobs {
		args = append(args, 0, j)
	}
	return redis.NewIntCmd(ctx, args...)
}

// jobCalls builds the calls of sc for jobs: one per hash slot and 1,000
// jobs (split), each with the key of each of its jobs that key picks and
// the arguments args gives for them (none when args is nil). It returns the
// jobs of each call, by index, and the calls.
func (s *Store) jobCalls(sc *script, jobs []string, key func(jobKeys) string, args func(idx []int) []any) ([][]int, []call) {
	parts := s.split(len(jobs), func(i int) string { return jobs[i] })
	calls := make([]call, len(parts))
	for i, idx := range parts {
		keys := make([]string, len(idx))
		for j, at := range idx {
			keys[j] = key(keysOf(s.prefix, jobs[at]))
		}
		calls[i] = call{script: sc, keys: keys}
		if args != nil {
			calls[i].args = args(idx)
		}
	}
	return parts, calls
}
