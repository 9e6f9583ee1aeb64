// Package difftest checks that a backend which encodes the claim decision
// table in its own language (Lua, SQL) answers exactly as memstore does,
// whose claims and skips run the table in Go (package rules).
//
// Run drives both stores through the same random operations (claim and skip
// batches with every policy, renewals, finishes with and without retries,
// releases; skips with and without NotBefore; claims of several
// incarnations) and compares every answer. Leases are either Short, expired by
// the next operation, or an hour, never; retries are due either at once or
// in the year 2200. So both stores agree on expiry whatever their clocks;
// memstore's clock moves a millisecond per call. memstore counts fences
// from 1 and the backend from its clock, so fences are compared through the
// pairing of the two stores' winning claims.
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
	mem := memstore.New(memstore.Options{Clock: func() time.Time {
		return time.Unix(0, 0).Add(time.Duration(tick.Add(1)) * time.Millisecond)
	}})
	defer mem.Close()
	d := &driver{t: t, got: s, mem: mem, o: o, rng: rand.New(rand.NewPCG(o.Seed, 2)),
		fences: map[jobFence]int64{}, lastWon: map[string]int64{}}
	// After the generation of every job of the fresh backend began.
	d.base = time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	for step := range o.Steps {
		time.Sleep(o.Pause)
		d.step = step
		switch n := d.rng.IntN(10); {
		case n < 3 && len(d.refs) > 0:
			d.mutate()
		case n < 4:
			d.skip()
		default:
			d.claim()
		}
	}
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
	base     time.Time
	step     int
	refs     []pair             // every claim won, in both stores
	fences   map[jobFence]int64 // the backend's fence → memstore's
	lastWon  map[string]int64   // per job, the backend's last fence
}

var jobNames = []string{"a", "b"}

func (d *driver) slot() time.Time { return d.base.Add(time.Duration(d.rng.IntN(20)) * time.Minute) }

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
	r.Overlap = []policy.Overlap{"", policy.OverlapForbid, policy.OverlapReplace}[d.rng.IntN(3)]
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
			NotBefore: []time.Time{{}, time.Unix(0, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}[d.rng.IntN(3)]}
	}
	p := slotstore.SkipParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(3)), Requests: reqs}
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

func (d *driver) claim() {
	reqs := make([]slotstore.ClaimRequest, 1+d.rng.IntN(6))
	for i := range reqs {
		reqs[i] = d.request()
	}
	p := slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(3)), Incarnation: fmt.Sprintf("i%d", d.rng.IntN(3)),
		Requests: reqs}
	gr, err := d.got.Claim(d.t.Context(), p)
	if err != nil {
		d.t.Fatalf("step %d: backend claim: %v", d.step, err)
	}
	mr, err := d.mem.Claim(d.t.Context(), p)
	if err != nil {
		d.t.Fatalf("step %d: memstore claim: %v", d.step, err)
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
}

// compare fails the test unless the two answers to request i of n agree.
func (d *driver) compare(i, n int, req any, g, m slotstore.ClaimResult) {
	d.t.Helper()
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
		gm.Manual != mm.Manual || gm.Incarnation != mm.Incarnation || !gm.KeepUntil.Equal(mm.KeepUntil) ||
		gm.FinishedAt.IsZero() != mm.FinishedAt.IsZero():
		return fmt.Sprintf("marker %+v, memstore %+v", gm, mm)
	case (g.Status == slotstore.Held || g.Status == slotstore.Waiting || g.Status == slotstore.NotYet) &&
		(g.Remaining <= 0) != (m.Remaining <= 0):
		return fmt.Sprintf("remaining %v, memstore %v", g.Remaining, m.Remaining)
	}
	return ""
}
