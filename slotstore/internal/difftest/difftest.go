// Package difftest checks that a backend which encodes the claim decision
// table in its own language (Lua, SQL) answers exactly as memstore does,
// whose claims and skips run the table in Go (package rules).
//
// Run drives both stores through the same random operations (claim and skip
// batches with every policy, queue claims behind slots whose holders
// crashed (crash), backfills, renewals, finishes with and without
// retries, releases; claims and skips with and without NotBefore, claims
// with and without NotAfter, naming a spec or none; claims of several
// incarnations; enrolments of a few specs, with and without revisions and
// Supersedes, which decide the specs in force the claims and skips are checked against; now and then a batch
// with an invalid request; appends to the actions log and reads of its
// pages, with filters, Before and Since) and compares every answer, and
// the two catalogs after each enrolment. Leases are either Short, expired by the next
// operation, or an hour, never; retries are due either at once or in the
// year 2200; a backfill's retention is the default one or an hour, which
// has ended for the old slots and for no other. So both stores agree on
// expiry whatever their clocks; memstore's clock starts at the test's time
// and moves a millisecond per call, but once: before the random
// operations, Run waits for a slot's retention of a millisecond to end on
// both clocks, moving memstore's to the real time, and backfills the slot
// before and after it is skipped. memstore counts fences
// from 1 and the backend from its clock, so fences are compared through the
// pairing of the two stores' winning claims. A job's generation begins at
// its first claim, which Run makes a few milliseconds after the call before
// it, so that in both stores a skip recorded before that claim is older
// than the generation (and never backfilled).
package difftest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// Options tune Run.
type Options struct {
	// Steps is the number of operations; zero means 400.
	Steps int
	// Short is a lease that has expired by the next operation, by the
	// backend's clock; zero means a microsecond.
	Short time.Duration
	// Pause is slept before every operation, so that Short has expired.
	Pause time.Duration
	// Seed seeds the operations.
	Seed uint64
}

// Run compares s with memstore; s must be fresh and empty.
func Run(t *testing.T, s slotstore.Store, o Options) {
	t.Helper()
	if o.Steps == 0 {
		o.Steps = 400
	}
	if o.Short == 0 {
		o.Short = time.Microsecond
	}
	var tick atomic.Int64
	start := time.Now()
	mem := memstore.New(memstore.Options{Clock: func() time.Time {
		return start.Add(time.Duration(tick.Add(1)) * time.Millisecond)
	}})
	defer mem.Close()
	d := &driver{t: t, got: s, mem: mem, o: o, rng: rand.New(rand.NewPCG(o.Seed, 2)),
		fences: map[jobFence]int64{}, lastWon: map[string]int64{}, claimed: map[string]bool{},
		inForce: map[string]string{}}
	memNow := func() time.Time { return start.Add(time.Duration(tick.Load()) * time.Millisecond) }
	// After the generation of every job of the fresh backend began; old
	// slots before it, in both stores.
	d.base = start.Add(slotstore.ClaimLead).UTC().Truncate(time.Hour).Add(time.Hour)
	d.old = d.base.Add(-24 * time.Hour)
	// Slots skipped before their job's generation began (a's, whose
	// generation its first claim begins) and after (b's, enrolled here),
	// old and not: a backfill wins only b's newer one.
	minute := time.Minute
	d.skipSlots("a", d.base, d.base.Add(minute), d.old)
	time.Sleep(2 * time.Millisecond)
	d.enroll("b")
	d.skipSlots("b", d.old.Add(minute), d.old.Add(2*minute), d.base.Add(2*minute))

	// A slot of b's generation whose retention of a millisecond has ended
	// by both clocks (memstore's is moved to the real time): a backfill of
	// it creates no marker, and once it is skipped does not win it; with
	// the default retention it does.
	recent := time.Now()
	if m := memNow(); m.After(recent) {
		recent = m
	}
	recent = recent.Add(slotstore.ClaimLead).UTC().Truncate(time.Second).Add(time.Second) // a slot the generation covers
	time.Sleep(time.Until(recent.Add(5 * time.Millisecond)))
	if lag := time.Since(memNow()); lag > 0 {
		tick.Add(int64(lag / time.Millisecond))
	}
	short := slotstore.ClaimRequest{Job: "b", Slot: recent, Lease: o.Short, Retain: time.Millisecond, Backfill: true}
	long := short
	long.Retain = 0
	d.want(d.claimBatch(slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{short}}), slotstore.Absent)
	d.skipSlots("b", recent)
	d.want(d.claimBatch(slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{short, long}}),
		slotstore.Skipped, slotstore.Won)

	for step := range o.Steps {
		time.Sleep(o.Pause)
		d.step = step
		switch n := d.rng.IntN(13); {
		case n < 3 && len(d.refs) > 0:
			d.mutate()
		case n < 4:
			d.skip()
		case n < 5:
			d.enrollSpecs()
		case n < 6:
			d.writeSchedules()
		case n == 11:
			d.crash()
		case n == 12:
			d.actions()
		default:
			d.claim()
		}
	}
	t.Logf("seed %d: %d answers compared, %d of them superseded, %d queued (%d behind expired leases alone); %d enrolments changed a spec in force; %d schedule writes; "+
		"%d actions appended, %d pages of them compared", o.Seed, d.answers, d.superseded, d.queued, d.queuedExpired, d.switches, d.writes, len(d.acts.got), d.actionReads)
}

type jobFence struct {
	job   string
	fence int64
}

type pair struct{ got, mem slotstore.Ref }

type driver struct {
	t        *testing.T
	got, mem slotstore.Store
	o        Options
	rng      *rand.Rand
	base     time.Time // the first of the slots after the generations began
	old      time.Time // the first of a few slots before them
	step     int
	refs     []pair             // every claim won, in both stores
	fences   map[jobFence]int64 // the backend's fence → memstore's
	lastWon  map[string]int64   // per job, the backend's last fence
	claimed  map[string]bool    // the jobs claimed or enrolled, whose generation began
	// answers, superseded, queued, queuedExpired and switches count what
	// was compared, for the log: the claims and skips answered, those
	// refused for their spec, those queued behind a running slot and,
	// of those, behind expired leases alone, and the enrolments that put
	// another spec in force.
	answers, superseded, queued, queuedExpired, switches int
	// writes counts the schedule writes compared (schedules.go).
	writes int
	// crashes counts the crash operations, each of which claims slots of
	// its own (queue.go).
	crashes int
	inForce map[string]string // per job, its spec in force at the last comparison
	// acts and actionReads are the entries appended to both actions logs
	// and the pages of them compared (actions.go).
	acts        actionLog
	actionReads int
}

var jobNames = []string{"a", "b", "s"}

func (d *driver) slot() time.Time {
	if d.rng.IntN(10) == 0 {
		return d.old.Add(time.Duration(d.rng.IntN(3)) * time.Minute)
	}
	return d.base.Add(time.Duration(d.rng.IntN(20)) * time.Minute)
}

func (d *driver) request() slotstore.ClaimRequest {
	r := slotstore.ClaimRequest{
		Job: jobNames[d.rng.IntN(len(jobNames))], Slot: d.slot(),
		Lease: time.Hour, MaxAttempts: d.rng.IntN(4), TakeoverOnly: d.rng.IntN(5) == 0, Manual: d.rng.IntN(5) == 0,
	}
	if d.rng.IntN(3) == 0 {
		r.Lease = d.o.Short
	}
	if d.rng.IntN(4) == 0 {
		r.OnCrash = policy.OnCrashSkip
	}
	r.Overlap = []policy.Overlap{"", policy.OverlapForbid, policy.OverlapReplace, policy.OverlapQueue}[d.rng.IntN(4)]
	if d.rng.IntN(3) == 0 {
		r.Backfill = true
		r.Overlap = []policy.Overlap{"", policy.OverlapAllow, policy.OverlapForbid}[d.rng.IntN(3)]
		// Ended for the old slots, which have no marker but a skipped one,
		// so a backfill of them makes none: a marker whose retention has
		// ended is one redisstore may delete at once, and memstore not.
		if d.rng.IntN(2) == 0 {
			r.Retain = time.Hour
		}
	}
	// None, long past on both clocks, or long after the test.
	r.NotBefore = []time.Time{{}, {}, {}, {}, time.Unix(0, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}[d.rng.IntN(6)]
	// A window that closed long ago on both clocks, or closes long after
	// the test; never before NotBefore.
	if d.rng.IntN(3) == 0 && r.NotBefore.Year() < 2200 {
		r.NotAfter = []time.Time{time.Unix(1, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}[d.rng.IntN(2)]
	}
	r.Spec = d.specName()
	// A job whose effect is once per slot: exempt from the generation
	// rules, on slots older than the generation too (ignored by a backfill).
	r.RunsAfterDataLoss = d.rng.IntN(4) == 0
	return r
}

func (d *driver) mutate() {
	ctx := d.t.Context()
	ref := d.refs[d.rng.IntN(len(d.refs))]
	op := d.rng.IntN(6)
	do := func(s slotstore.Store, ref slotstore.Ref) error {
		switch op {
		case 0:
			return s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Hour})
		case 1:
			return s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Failed, Error: "e"})
		case 2:
			return s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded})
		case 3: // a retry due at once
			return s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.TimedOut, RetryAt: time.Unix(0, 0).Add(time.Millisecond)})
		case 4: // a retry due long after the test
			return s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Failed, Error: "r",
				RetryAt: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)})
		}
		return s.Release(ctx, ref)
	}
	ge, me := do(d.got, ref.got), do(d.mem, ref.mem)
	if errors.Is(ge, slotstore.ErrLeaseLost) != errors.Is(me, slotstore.ErrLeaseLost) ||
		errors.Is(ge, slotstore.ErrFinished) != errors.Is(me, slotstore.ErrFinished) || (ge == nil) != (me == nil) {
		d.t.Fatalf("step %d: mutation %d of %+v: backend %v, memstore %v", d.step, op, ref, ge, me)
	}
}

func (d *driver) skip() {
	reqs := make([]slotstore.SkipRequest, 1+d.rng.IntN(4))
	for i := range reqs {
		reqs[i] = slotstore.SkipRequest{Job: jobNames[d.rng.IntN(len(jobNames))], Slot: d.slot(),
			Reason: []string{"missed", "catch_up"}[d.rng.IntN(2)],
			// None, long past on both clocks, or long after the test.
			NotBefore: []time.Time{{}, time.Unix(0, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}[d.rng.IntN(3)],
			Spec:      d.specName()}
	}
	d.skipBatch(slotstore.SkipParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(3)), Requests: reqs})
}

// skipBatch makes the skips of p in both stores and compares the answers.
func (d *driver) skipBatch(p slotstore.SkipParams) {
	reqs := p.Requests
	gr, err := d.got.Skip(d.t.Context(), p)
	if err != nil {
		d.t.Fatalf("step %d: backend skip: %v", d.step, err)
	}
	mr, err := d.mem.Skip(d.t.Context(), p)
	if err != nil {
		d.t.Fatalf("step %d: memstore skip: %v", d.step, err)
	}
	for i := range reqs {
		d.compare(i, len(reqs), reqs[i], gr[i], mr[i])
	}
}

// skipSlots records slots of job skipped in both stores, comparing the
// answers.
func (d *driver) skipSlots(job string, slots ...time.Time) {
	reqs := make([]slotstore.SkipRequest, len(slots))
	for i, slot := range slots {
		reqs[i] = slotstore.SkipRequest{Job: job, Slot: slot, Reason: "missed: down"}
	}
	d.skipBatch(slotstore.SkipParams{Replica: "r0", Requests: reqs})
}

// enroll begins the generation of job in both stores.
func (d *driver) enroll(job string) {
	for _, s := range []slotstore.Store{d.got, d.mem} {
		if _, err := s.Enroll(d.t.Context(), slotstore.EnrollParams{Jobs: []string{job}}); err != nil {
			d.t.Fatalf("enroll %s: %v", job, err)
		}
	}
	d.claimed[job] = true
}

func (d *driver) claim() {
	reqs := make([]slotstore.ClaimRequest, 1+d.rng.IntN(6))
	for i := range reqs {
		reqs[i] = d.request()
	}
	if d.rng.IntN(40) == 0 {
		// A backfill of a term, or with replace or queue: the batch fails
		// and changes nothing.
		bad := &reqs[d.rng.IntN(len(reqs))]
		bad.Backfill = true
		switch d.rng.IntN(3) {
		case 0:
			bad.Term = true
		case 1:
			bad.Overlap = policy.OverlapReplace
		default:
			bad.Overlap = policy.OverlapQueue
		}
	}
	d.claimBatch(slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(3)), Incarnation: fmt.Sprintf("i%d", d.rng.IntN(3)),
		Requests: reqs})
}

// claimBatch makes the claims of p in both stores, compares the answers and
// returns memstore's (none when both refused the batch as invalid).
func (d *driver) claimBatch(p slotstore.ClaimParams) []slotstore.ClaimResult {
	reqs := p.Requests
	jobs := make([]string, len(reqs))
	for i, r := range reqs {
		jobs[i] = r.Job
	}
	d.settle(jobs)
	gr, gerr := d.got.Claim(d.t.Context(), p)
	mr, merr := d.mem.Claim(d.t.Context(), p)
	switch {
	case errors.Is(gerr, slotstore.ErrInvalid) && errors.Is(merr, slotstore.ErrInvalid):
		return nil
	case gerr != nil || merr != nil:
		d.t.Fatalf("step %d: claim: backend %v, memstore %v", d.step, gerr, merr)
	}
	for _, r := range reqs {
		d.claimed[r.Job] = true
	}
	for i := range reqs {
		g, m := gr[i], mr[i]
		if g.Status == slotstore.Won && m.Status == slotstore.Won {
			if g.Claim.Fence <= d.lastWon[g.Claim.Job] {
				d.t.Fatalf("step %d, request %d: fence %d of %s after %d", d.step, i, g.Claim.Fence, g.Claim.Job, d.lastWon[g.Claim.Job])
			}
			d.lastWon[g.Claim.Job] = g.Claim.Fence
			d.fences[jobFence{g.Claim.Job, g.Claim.Fence}] = m.Claim.Fence
			d.refs = append(d.refs, pair{g.Claim.Ref, m.Claim.Ref})
		}
		d.compare(i, len(reqs), reqs[i], g, m)
	}
	return mr
}

// want fails the test unless the answers res have the statuses want.
func (d *driver) want(res []slotstore.ClaimResult, want ...slotstore.Status) {
	d.t.Helper()
	if len(res) != len(want) {
		d.t.Fatalf("%d answers, want %d", len(res), len(want))
	}
	for i, r := range res {
		if r.Status != want[i] {
			d.t.Fatalf("request %d: %v, want %v (marker %+v)", i, r.Status, want[i], r.Marker)
		}
	}
}

// compare fails the test unless the two answers to request i of n agree.
func (d *driver) compare(i, n int, req any, g, m slotstore.ClaimResult) {
	d.t.Helper()
	d.answers++
	switch m.Status {
	case slotstore.Superseded:
		d.superseded++
	case slotstore.Queued:
		d.queued++
		if m.Remaining == 0 {
			d.queuedExpired++
		}
	}
	if f := d.fences[jobFence{g.Marker.Job, g.Marker.Fence}]; f != m.Marker.Fence {
		d.t.Fatalf("step %d, request %d: marker fence %d pairs with memstore's %d, memstore has %d",
			d.step, i, g.Marker.Fence, f, m.Marker.Fence)
	}
	if len(g.Replaced) != len(m.Replaced) {
		d.t.Fatalf("step %d, request %d: replaced %v, memstore %v", d.step, i, g.Replaced, m.Replaced)
	}
	for j, ref := range g.Replaced {
		mr := m.Replaced[j]
		if ref.Job != mr.Job || !ref.Slot.Equal(mr.Slot) || d.fences[jobFence{ref.Job, ref.Fence}] != mr.Fence {
			d.t.Fatalf("step %d, request %d: replaced %v, memstore %v", d.step, i, g.Replaced, m.Replaced)
		}
	}
	if diff := diff(g, m); diff != "" {
		d.t.Fatalf("step %d, request %d of %d (%+v): %s", d.step, i, n, req, diff)
	}
}

// diff describes how two answers to one request differ, ignoring times and
// fence values.
func diff(g, m slotstore.ClaimResult) string {
	gm, mm := g.Marker, m.Marker
	switch {
	case g.Status != m.Status:
		return fmt.Sprintf("status %v, memstore %v", g.Status, m.Status)
	case g.Claim.Job != m.Claim.Job || !g.Claim.Slot.Equal(m.Claim.Slot) || g.Claim.Attempt != m.Claim.Attempt ||
		g.Claim.PrevHolder != m.Claim.PrevHolder || g.Claim.Retry != m.Claim.Retry:
		return fmt.Sprintf("claim %+v, memstore %+v", g.Claim, m.Claim)
	case gm.Job != mm.Job || !gm.Slot.Equal(mm.Slot) || gm.State != mm.State || gm.Holder != mm.Holder ||
		gm.Attempt != mm.Attempt || gm.Outcome != mm.Outcome || gm.Error != mm.Error || gm.Reason != mm.Reason ||
		gm.Manual != mm.Manual || gm.Backfill != mm.Backfill || gm.Incarnation != mm.Incarnation || !gm.KeepUntil.Equal(mm.KeepUntil) ||
		gm.FinishedAt.IsZero() != mm.FinishedAt.IsZero():
		return fmt.Sprintf("marker %+v, memstore %+v", gm, mm)
	case (g.Status == slotstore.Held || g.Status == slotstore.Waiting || g.Status == slotstore.NotYet) &&
		(g.Remaining <= 0) != (m.Remaining <= 0):
		return fmt.Sprintf("remaining %v, memstore %v", g.Remaining, m.Remaining)
	case g.Status == slotstore.Queued && ((g.Remaining <= 0) != (m.Remaining <= 0) || g.Remaining < 0 || m.Remaining < 0 ||
		g.Remaining > time.Hour || m.Remaining > time.Hour):
		// The live leases it waits for are an hour's, claimed by clocks
		// that differ: it waits, in both, for no longer than that; behind
		// expired leases alone (a crashed holder a takeover may still
		// win), in both, for no time.
		return fmt.Sprintf("queued for %v, memstore %v; want both 0 or both within (0, 1h]", g.Remaining, m.Remaining)
	}
	return ""
}
