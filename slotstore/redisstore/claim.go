package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// maxBatch caps the slots one script call decides, so that one call never
// keeps Redis from other clients for long: a call of 1,000 new slots runs for
// about 25 ms on a small (2-core) machine, a call of one slot for tens of
// microseconds. Larger batches become several calls in one pipeline. The
// cap also keeps every ZADD of the script within Lua's limit of 8,000 values
// unpacked at once.
const maxBatch = 1000

// request is one request of claim.lua: a claim, or a skip when skip is
// true.
type request struct {
	slotstore.ClaimRequest
	skip bool
	// reason is a skip's reason, or the one a replace claim gives the
	// markers it supersedes.
	reason string
	// notBefore is the request's NotBefore, a skip's or a claim's.
	notBefore time.Time
}

// Claim implements slotstore.Store. The batch is one round trip: on a single
// server, one script call per 1,000 requests, pipelined; in a Cluster, one
// call per hash slot (and per 1,000 requests of it), sent to every master
// concerned at once, plus a SADD of the batch's job names. Requests of one
// job share a hash slot, so their calls run in request order and their
// fences grow in request order, and an overlap policy sees the slots won
// earlier in the batch. The script checks each job's generation in the
// same call, beginning it if the job has none, and, for a request that
// names a spec, the job's spec in force, before anything else (a refused
// request answers Superseded and changes nothing). With
// Options.WaitReplicas, each pipeline ends with a WAIT (runWaited).
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeClaims(p.Requests)
	if err != nil {
		return nil, err
	}
	rs := make([]request, len(reqs))
	for i, r := range reqs {
		rs[i] = request{ClaimRequest: r, notBefore: r.NotBefore}
		if r.Overlap == policy.OverlapReplace {
			rs[i].reason = rules.ReasonReplacedBy + r.Slot.Format(time.RFC3339)
		}
	}
	return s.decide(ctx, "claim", p.Replica, p.Incarnation, rs)
}

// Skip implements slotstore.Store, with the claim script: one round trip a
// batch, as Claim.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	rs := make([]request, len(reqs))
	for i, r := range reqs {
		rs[i] = request{ClaimRequest: slotstore.ClaimRequest{Job: r.Job, Slot: r.Slot, Retain: r.Retain, Spec: r.Spec}, skip: true,
			reason: r.Reason, notBefore: r.NotBefore}
	}
	return s.decide(ctx, "skip", p.Replica, "", rs)
}

// decide runs the claim script on reqs for replica and incarnation. Claims
// wait for replicas when the store does; skips never do: a skip a failover
// loses leaves a slot nobody ran unrecorded.
func (s *Store) decide(ctx context.Context, op, replica, incarnation string, reqs []request) ([]slotstore.ClaimResult, error) {
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return []slotstore.ClaimResult{}, nil
	}

	parts := s.split(len(reqs), func(i int) string { return reqs[i].Job })
	calls := make([]call, len(parts))
	for i, idx := range parts {
		calls[i] = s.claimCall(replica, incarnation, reqs, idx)
	}
	var extra []redis.Cmder
	if !s.single {
		// Best effort: a job missing from the set is added again by its next
		// claim, and only History and Prune of every job read the set.
		extra = append(extra, redis.NewIntCmd(ctx, append([]any{"sadd", jobsKey(s.prefix)}, jobNames(reqs)...)...))
	}
	var (
		cmds    []onceCmd
		waitErr error
	)
	if op == "claim" {
		cmds, waitErr = s.runWaited(ctx, calls, extra...)
	} else {
		cmds = s.runAll(ctx, calls, extra...)
	}

	out := make([]slotstore.ClaimResult, len(reqs))
	var failed error
	ran, sure := false, true
	for i, cmd := range cmds {
		res, err := cmd.Result()
		if err == nil {
			ran = true
			err = fillClaims(out, reqs, parts[i], replica, incarnation, res)
			sure = sure && err == nil
		} else {
			sure = sure && notRun(err)
		}
		if err != nil && failed == nil {
			failed = err
		}
	}
	switch {
	case failed == nil && waitErr == nil:
		return out, nil
	case failed == nil:
		// Every call ran, and its writes may not outlive a failover.
		return nil, rules.OutcomeUnknown(fmt.Sprintf("redisstore %s of %d slots", op, len(reqs)), waitErr)
	case ran || !sure:
		// Some calls may have won slots that this error hides.
		return nil, rules.OutcomeUnknown(fmt.Sprintf("redisstore %s of %d slots", op, len(reqs)), failed)
	}
	return nil, s.fail(fmt.Sprintf("%s of %d slots", op, len(reqs)), failed)
}

// split divides n requests, by index, into the groups of one script call
// each: consecutive runs of maxBatch on a single server; per hash slot of
// the job of each, in order of first appearance, then runs of maxBatch,
// otherwise.
func (s *Store) split(n int, job func(i int) string) [][]int {
	var groups [][]int
	if s.single {
		groups = [][]int{make([]int, n)}
		for i := range n {
			groups[0][i] = i
		}
	} else {
		at := map[int]int{} // hash slot -> index in groups
		for i := range n {
			hs := hashSlot(job(i))
			g, ok := at[hs]
			if !ok {
				g = len(groups)
				at[hs] = g
				groups = append(groups, nil)
			}
			groups[g] = append(groups[g], i)
		}
	}
	var parts [][]int
	for _, g := range groups {
		for len(g) > maxBatch {
			parts = append(parts, g[:maxBatch])
			g = g[maxBatch:]
		}
		parts = append(parts, g)
	}
	return parts
}

// profile is what a request of claim.lua shares with the other requests of
// its call that ask alike: everything but the job, the slot, NotBefore and
// NotAfter.
// A batch of one replica's due slots has a handful, however many requests
// (and, when they name specs, about one a job).
type profile struct {
	lease       int64
	onCrash     policy.OnCrash
	maxAttempts int
	retain      int64
	takeover    bool
	overlap     policy.Overlap
	manual      bool
	skip        bool
	reason      string
	term        bool
	backfill    bool
	spec        string
}

func profileOf(r request) profile {
	return profile{
		lease: millisUp(r.Lease), onCrash: r.OnCrash, maxAttempts: r.MaxAttempts, retain: r.Retain.Milliseconds(),
		takeover: r.TakeoverOnly, overlap: r.Overlap, manual: r.Manual, skip: r.skip, reason: r.reason, term: r.Term,
		backfill: r.Backfill, spec: r.Spec,
	}
}

// claimLeadMillis is slotstore.ClaimLead in milliseconds, as claim.lua
// compares it with a generation's beginning (Unix ms): a generation covers
// the slots from Born + ClaimLead (slotstore.Generation.Covers). Rounded
// up, should ClaimLead ever not be whole milliseconds, so the script never
// covers a slot the Go rule does not.
const claimLeadMillis = int64((slotstore.ClaimLead + time.Millisecond - 1) / time.Millisecond)

// claimCall builds the claim.lua call for the requests at idx: the jobs,
// the profiles, then five values a request (see the script).
func (s *Store) claimCall(replica, incarnation string, reqs []request, idx []int) call {
	group := map[string]int{}  // job -> its number g in the script, from 1
	kinds := map[profile]int{} // profile -> its number p in the script, from 1
	var names, tags []any
	var profiles []profile
	var tail []any
	for _, i := range idx {
		r := reqs[i]
		g := group[r.Job]
		if g == 0 {
			names = append(names, r.Job)
			tags = append(tags, keysOf(s.prefix, r.Job).tag)
			g = len(names)
			group[r.Job] = g
		}
		pr := profileOf(r)
		p := kinds[pr]
		if p == 0 {
			profiles = append(profiles, pr)
			p = len(profiles)
			kinds[pr] = p
		}
		slot := r.Slot.Unix()
		notBefore := ""
		switch {
		case r.notBefore.IsZero():
		case r.notBefore.Equal(r.Slot):
			notBefore = "="
		default:
			notBefore = strconv.FormatInt(r.notBefore.UnixMicro(), 10)
		}
		tail = append(tail, g, slot, p, notBefore, afterSlot(r.NotAfter, r.Slot))
	}
	keys := []string{keysOf(s.prefix, reqs[idx[0]].Job).gen}
	withJobs := "0"
	if s.single {
		withJobs = "1"
		keys = append(keys, jobsKey(s.prefix), s.liveKey())
	}
	args := make([]any, 0, 7+2*len(names)+12*len(profiles)+len(tail))
	args = append(args, replica, incarnation, len(names), withJobs, slotstore.ReasonDataLoss, claimLeadMillis, len(profiles))
	args = append(append(args, names...), tags...)
	for _, p := range profiles {
		args = append(args, p.lease, string(p.onCrash), p.maxAttempts, p.retain, flag(p.takeover), string(p.overlap),
			flag(p.manual), flag(p.skip), p.reason, flag(p.term), flag(p.backfill), p.spec)
	}
	args = append(args, tail...)
	return call{script: claimScript, keys: keys, args: args}
}

// afterSlot is a claim's NotAfter t as claim.lua reads it: "" for none,
// else the microseconds from slot to t (negative when t is before it),
// with three or more trailing zeros written as a power of ten, which Lua's
// tonumber reads exactly: "6e7" for the minute after the slot. The engine
// sends NotAfter = slot + starting deadline with nearly every claim, so
// the value stays a few bytes whatever the year. A t further than about
// 292 years from slot counts as that far (time.Time.Sub): the decision is
// the same while Redis's clock is within 292 years of the slot.
func afterSlot(t, slot time.Time) string {
	if t.IsZero() {
		return ""
	}
	us := int64(t.Sub(slot) / time.Microsecond)
	if us == 0 {
		return "0"
	}
	exp := 0
	for us%10 == 0 {
		us /= 10
		exp++
	}
	if exp < 3 {
		// No shorter as a power of ten.
		for range exp {
			us *= 10
		}
		return strconv.FormatInt(us, 10)
	}
	return strconv.FormatInt(us, 10) + "e" + strconv.Itoa(exp)
}

// flag is b as a script reads it.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// wonFirst is the status claim.lua answers for a claim that won the slot's
// first marker, with the fence alone: the rest of the marker is what the
// request asked for.
const wonFirst = 9

// refusedSpec is the status claim.lua answers, alone, for a request whose
// spec is not the job's spec in force: slotstore.Superseded.
const refusedSpec = 10

// queuedWait is the status claim.lua answers for a claim with
// policy.OverlapQueue that changed nothing while another slot of the job
// runs, under a live lease or an expired one a takeover may still win,
// with the least remaining lease of those slots (us, 0 for an expired
// one) alone: slotstore.Queued.
const queuedWait = 11

// fillClaims sets the results of the requests at idx from claim.lua's reply.
func fillClaims(out []slotstore.ClaimResult, reqs []request, idx []int, replica, incarnation string, res any) error {
	v, ok := res.([]any)
	if !ok || len(v) == 0 {
		return fmt.Errorf("unexpected claim script reply %T", res)
	}
	r := &reply{v: v}
	now := r.millis()
	for _, i := range idx {
		req := reqs[i]
		status := slotstore.Status(r.int())
		if status == refusedSpec {
			out[i] = rules.Superseded(req.Job, req.Slot)
			continue
		}
		if status == queuedWait {
			out[i] = slotstore.ClaimResult{Status: slotstore.Queued, Marker: slotstore.Marker{Job: req.Job, Slot: req.Slot},
				Remaining: time.Duration(r.int()) * time.Microsecond}
			continue
		}
		if status == wonFirst {
			m := slotstore.Marker{
				Job: req.Job, Slot: req.Slot, State: slotstore.StateRunning, Holder: replica, Fence: r.int(),
				Attempt: 1, ClaimedAt: now, LeaseEnd: now.Add(time.Duration(millisUp(req.Lease)) * time.Millisecond),
				KeepUntil: time.UnixMilli(req.Slot.UnixMilli() + req.Retain.Milliseconds()).UTC(), Manual: req.Manual,
				Backfill: req.Backfill, Incarnation: incarnation,
			}
			out[i] = slotstore.ClaimResult{Status: slotstore.Won, Marker: m, Claim: slotstore.Claim{Ref: m.Ref(), Attempt: 1}}
			continue
		}
		m := r.marker(req.Job, req.Slot.Unix())
		prev, remaining := r.str(), time.Duration(r.int())*time.Microsecond
		retry, replaced := r.str() == "1", r.refs(req.Job)
		res := slotstore.ClaimResult{Status: status, Marker: m}
		switch status {
		case slotstore.Won:
			res.Claim = slotstore.Claim{Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: prev, Retry: retry}
			res.Replaced = replaced
		case slotstore.Held, slotstore.Waiting:
			res.Remaining = remaining
		case slotstore.NotYet:
			res.Marker, res.Remaining = slotstore.Marker{}, remaining // there is none
		case slotstore.Absent:
			res.Marker = slotstore.Marker{} // there is none
		case slotstore.Finished, slotstore.Abandoned, slotstore.Skipped:
		default:
			r.fail("status " + strconv.Itoa(int(status)))
		}
		out[i] = res
	}
	if answered := r.int(); answered > 0 {
		for _, i := range idx {
			out[i].Answered = time.UnixMicro(answered).UTC()
		}
	}
	if r.err == nil && r.i != len(v) {
		r.fail(fmt.Sprintf("%d values for %d requests", len(v), len(idx)))
	}
	return r.err
}

// jobNames lists the distinct jobs of reqs.
func jobNames(reqs []request) []any {
	seen := map[string]bool{}
	var names []any
	for _, r := range reqs {
		if !seen[r.Job] {
			seen[r.Job] = true
			names = append(names, r.Job)
		}
	}
	return names
}

// millisUp is d in whole milliseconds, rounded up so that no positive
// lease becomes zero.
func millisUp(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
