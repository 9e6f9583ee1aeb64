package memstore_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// model is what FuzzStore knows of the store it drives: the store's clock,
// the claims it won, and the fences and generations it was told of.
type model struct {
	t     *testing.T
	s     *memstore.Store
	now   time.Time
	step  int
	won   []slotstore.Ref
	fence map[string]int64     // per job, the highest fence won
	born  map[string]time.Time // per job, when its generation began
	// backfilled holds the skipped slots the last claim batch won.
	backfilled map[key]bool
}

type key struct {
	job  string
	slot int64
}

func keyOf(job string, slot time.Time) key { return key{job, slot.Unix()} }

var (
	replicas = []string{"r0", "r1", ""}
	ticks    = []time.Duration{time.Second, time.Minute, time.Hour, 25 * time.Hour, 8 * 24 * time.Hour}
)

func newModel(t *testing.T) *model {
	m := &model{t: t, now: start, fence: map[string]int64{}, born: map[string]time.Time{}}
	m.s = memstore.New(memstore.Options{Clock: func() time.Time { return m.now }})
	t.Cleanup(func() { m.s.Close() })
	return m
}

// run reads one call from r, makes it and checks its answer.
func (m *model) run(r *reader) {
	ctx := context.Background()
	before := m.markers()
	m.backfilled = map[key]bool{}
	var err error
	op := byte(r.pick(8))
	switch op {
	case opClaim:
		p := slotstore.ClaimParams{Replica: replicas[r.pick(3)], Incarnation: replicas[r.pick(3)],
			Requests: make([]slotstore.ClaimRequest, 1+r.pick(3))}
		for i := range p.Requests {
			p.Requests[i] = r.claimRequest()
		}
		var res []slotstore.ClaimResult
		if res, err = m.s.Claim(ctx, p); err == nil {
			m.checkClaims(before, p.Requests, res)
		}
		for _, r := range p.Requests {
			if bad := r.Backfill && (r.Term || r.Overlap == policy.OverlapReplace); bad && !errors.Is(err, slotstore.ErrInvalid) {
				m.fatalf("claim batch with %+v: %v, want ErrInvalid", r, err)
			}
		}
	case opRenew:
		p := slotstore.RenewParams{Ref: r.ref(m.won), Lease: r.duration()}
		err = m.s.Renew(ctx, p)
		m.checkMutation("renew", before, p.Ref, rules.ValidateRenew(p), err)
	case opFinish:
		p := slotstore.FinishParams{Ref: r.ref(m.won), RetryAt: r.instant(m.now), Error: "e",
			Outcome: []slotstore.Outcome{slotstore.Succeeded, slotstore.Failed, slotstore.TimedOut, "", "fine"}[r.pick(5)]}
		err = m.s.Finish(ctx, p)
		m.checkMutation("finish", before, p.Ref, rules.ValidateFinish(p), err)
	case opRelease:
		ref := r.ref(m.won)
		err = m.s.Release(ctx, ref)
		m.checkMutation("release", before, ref, rules.ValidateRef(ref), err)
	case opSkip:
		p := slotstore.SkipParams{Replica: replicas[r.pick(3)], Requests: make([]slotstore.SkipRequest, 1+r.pick(3))}
		for i := range p.Requests {
			p.Requests[i] = r.skipRequest(m.now)
		}
		var res []slotstore.ClaimResult
		if res, err = m.s.Skip(ctx, p); err == nil {
			m.checkSkips(before, p.Requests, res)
		}
	case opTick:
		m.now = m.now.Add(ticks[r.pick(len(ticks))])
	case opEnroll:
		p := slotstore.EnrollParams{Jobs: make([]string, r.pick(3))}
		for i := range p.Jobs {
			p.Jobs[i] = r.job()
		}
		var gens []slotstore.Generation
		if gens, err = m.s.Enroll(ctx, p); err == nil {
			m.checkEnroll(p.Jobs, gens)
		}
	case opPrune:
		_, err = m.s.Prune(ctx)
	}
	after := m.markers()
	if err != nil && !errors.Is(err, slotstore.ErrInvalid) && !errors.Is(err, slotstore.ErrLeaseLost) &&
		!errors.Is(err, slotstore.ErrFinished) {
		m.fatalf("op %d: unexpected error %v", op, err)
	}
	if err != nil && !reflect.DeepEqual(before, after) {
		m.fatalf("op %d failed with %v and changed the store:\n%v\nto\n%v", op, err, before, after)
	}
	// Only a prune deletes, exactly the prunable markers; no call changes a
	// final marker, and a skip or a prune changes none that it keeps.
	for k, b := range before {
		a, kept := after[k]
		switch {
		case op == opPrune && kept == rules.Prunable(b, m.now):
			m.fatalf("prune at %v: marker %+v prunable %v, kept %v", m.now, b, rules.Prunable(b, m.now), kept)
		case op != opPrune && !kept:
			m.fatalf("op %d deleted %+v", op, b)
		case op == opClaim && m.backfilled[k]: // checked by checkClaims
		case kept && (b.State.Final() || op == opPrune || op == opSkip) && !reflect.DeepEqual(a, b):
			m.fatalf("op %d changed %+v to %+v", op, b, a)
		}
	}
}

// markers returns every marker of the store by slot.
func (m *model) markers() map[key]slotstore.Marker {
	ms, err := m.s.History(context.Background(), slotstore.HistoryParams{Limit: math.MaxInt})
	if err != nil {
		m.fatalf("history: %v", err)
	}
	out := make(map[key]slotstore.Marker, len(ms))
	for _, mk := range ms {
		out[keyOf(mk.Job, mk.Slot)] = mk
	}
	return out
}

func (m *model) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("step %d: "+format, append([]any{m.step}, args...)...)
}
