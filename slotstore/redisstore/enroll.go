package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// A job's generation is the key <prefix>{job}:gen, when it began in Unix
// milliseconds by Redis's clock. It has no expiry and nothing deletes it,
// so it is gone only when Redis lost the job's data: then the next Enroll
// or claim begins a new generation, and claims no longer create the first
// marker of a slot from before it (claim.lua). It lives under the job's
// hash tag, so in a Cluster each job's generation is lost with its own
// markers, on its own master, and the claim script reads it in the call
// that claims.

// Enroll implements slotstore.Store: one script call, or in a Cluster one
// per hash slot, all pipelined. The call also reads each job's newest marker
// from its slot index (Generation.Newest), removing the entries of markers
// Redis has expired that it meets; a job whose newest thousand entries are
// all gone is read again by History, one more round trip in that rare case.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeJobs(p)
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
	parts := s.split(len(jobs), func(i int) string { return jobs[i] })
	calls := make([]call, len(parts))
	for i, idx := range parts {
		keys := make([]string, len(idx))
		for j, at := range idx {
			keys[j] = keysOf(s.prefix, jobs[at]).gen
		}
		calls[i] = call{script: enrollScript, keys: keys, args: []any{s.liveKey()}}
	}
	op := fmt.Sprintf("enroll %d jobs", len(jobs))
	var unsure []int // jobs whose newest marker the script could not tell
	for i, cmd := range s.runAll(ctx, calls) {
		res, err := cmd.Result()
		if err != nil {
			return nil, s.fail(op, err)
		}
		r, n, err := newReply(res, 2)
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
		}
		if r.err != nil {
			return nil, s.fail(op, r.err)
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
