package pgstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// TestDecisionTableMatchesMemstore drives pgstore and memstore, whose
// claims are slotstore.Decide and slotstore.Apply in Go, through the same
// random operations and compares every answer: the claim function must
// encode the same table. Leases are either a microsecond (expired by the
// next call) or an hour (never), so both stores agree on expiry whatever
// their clocks; memstore's clock moves a millisecond per call. memstore
// counts fences from 1 and pgstore from the clock, so fences are compared
// through the pairing of the two stores' winning claims.
func TestDecisionTableMatchesMemstore(t *testing.T) {
	t.Parallel()
	pg := newStore(t)
	var tick atomic.Int64
	mem := memstore.New(memstore.WithClock(func() time.Time {
		return time.Unix(0, 0).Add(time.Duration(tick.Add(1)) * time.Millisecond)
	}))
	defer mem.Close()

	rng := rand.New(rand.NewPCG(4, 2))
	jobNames := []string{"a", "b"}
	type pair struct{ pg, mem slotstore.Ref }
	var refs []pair // every claim won, in both stores
	type jobFence struct {
		job   string
		fence int64
	}
	fences := map[jobFence]int64{} // pgstore fence → memstore fence
	lastWon := map[string]int64{}  // per job, pgstore's last fence
	randomRequest := func() slotstore.ClaimRequest {
		r := slotstore.ClaimRequest{
			Job: jobNames[rng.IntN(len(jobNames))], Slot: slot(rng.IntN(30)),
			Lease: time.Hour, MaxAttempts: rng.IntN(4), TakeoverOnly: rng.IntN(4) == 0,
		}
		if rng.IntN(3) == 0 {
			r.Lease = time.Microsecond
		}
		if rng.IntN(4) == 0 {
			r.OnCrash = slotstore.OnCrashSkip
		}
		return r
	}

	for step := range 400 {
		ctx := t.Context()
		if len(refs) > 0 && rng.IntN(3) == 0 {
			ref := refs[rng.IntN(len(refs))]
			op := rng.IntN(3)
			do := func(s slotstore.Store, ref slotstore.Ref) error {
				switch op {
				case 0:
					return s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Hour})
				case 1:
					return s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Failed, Error: "e"})
				}
				return s.Release(ctx, ref)
			}
			pe, me := do(pg, ref.pg), do(mem, ref.mem)
			if errors.Is(pe, slotstore.ErrLeaseLost) != errors.Is(me, slotstore.ErrLeaseLost) || (pe == nil) != (me == nil) {
				t.Fatalf("step %d: mutation %d of %+v: pgstore %v, memstore %v", step, op, ref, pe, me)
			}
			continue
		}
		reqs := make([]slotstore.ClaimRequest, 1+rng.IntN(6))
		for i := range reqs {
			reqs[i] = randomRequest()
		}
		p := slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", rng.IntN(3)), Requests: reqs}
		pr, err := pg.Claim(ctx, p)
		if err != nil {
			t.Fatalf("step %d: pgstore claim: %v", step, err)
		}
		mr, err := mem.Claim(ctx, p)
		if err != nil {
			t.Fatalf("step %d: memstore claim: %v", step, err)
		}
		for i := range reqs {
			p, m := pr[i], mr[i]
			if p.Status == slotstore.Won && m.Status == slotstore.Won {
				if p.Claim.Fence <= lastWon[p.Claim.Job] {
					t.Fatalf("step %d, request %d: fence %d of %s after %d", step, i, p.Claim.Fence, p.Claim.Job, lastWon[p.Claim.Job])
				}
				lastWon[p.Claim.Job] = p.Claim.Fence
				fences[jobFence{p.Claim.Job, p.Claim.Fence}] = m.Claim.Fence
				refs = append(refs, pair{p.Claim.Ref, m.Claim.Ref})
			}
			if f := fences[jobFence{p.Marker.Job, p.Marker.Fence}]; f != m.Marker.Fence {
				t.Fatalf("step %d, request %d: marker fence %d pairs with memstore's %d, memstore has %d",
					step, i, p.Marker.Fence, f, m.Marker.Fence)
			}
			if d := diff(p, m); d != "" {
				t.Fatalf("step %d, request %d of %d (%+v): %s", step, i, len(reqs), reqs[i], d)
			}
		}
	}
}

// diff describes how two answers to one request differ, ignoring times and
// fence values.
func diff(p, m slotstore.ClaimResult) string {
	pm, mm := p.Marker, m.Marker
	switch {
	case p.Status != m.Status:
		return fmt.Sprintf("status %v, memstore %v", p.Status, m.Status)
	case p.Claim.Job != m.Claim.Job || !p.Claim.Slot.Equal(m.Claim.Slot) || p.Claim.Attempt != m.Claim.Attempt ||
		p.Claim.PrevHolder != m.Claim.PrevHolder:
		return fmt.Sprintf("claim %+v, memstore %+v", p.Claim, m.Claim)
	case pm.Job != mm.Job || !pm.Slot.Equal(mm.Slot) || pm.State != mm.State || pm.Holder != mm.Holder ||
		pm.Attempt != mm.Attempt || pm.Outcome != mm.Outcome || pm.Error != mm.Error ||
		!pm.KeepUntil.Equal(mm.KeepUntil) || pm.FinishedAt.IsZero() != mm.FinishedAt.IsZero():
		return fmt.Sprintf("marker %+v, memstore %+v", pm, mm)
	case (p.Status == slotstore.Held) && (p.Remaining <= 0) != (m.Remaining <= 0):
		return fmt.Sprintf("remaining %v, memstore %v", p.Remaining, m.Remaining)
	}
	return ""
}
