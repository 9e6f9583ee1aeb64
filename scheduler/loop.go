package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// maxBatch caps the claims sent in one store call.
const maxBatch = 1000

// loop is the timer loop. One goroutine, the one calling run, owns the heap;
// runs it starts are tracked by runs and counted by active.
type loop struct {
	s      *Scheduler
	runCtx context.Context
	runs   *sync.WaitGroup
	active atomic.Int64
	h      entryHeap
}

func newLoop(s *Scheduler, runCtx context.Context, runs *sync.WaitGroup) *loop {
	return &loop{s: s, runCtx: runCtx, runs: runs}
}

func (l *loop) running() int64 { return l.active.Load() }

// run schedules every job and serves the heap until ctx ends.
func (l *loop) run(ctx context.Context) {
	now := l.s.now()
	for _, p := range l.s.plans {
		l.schedule(p, now)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		if len(l.h) > 0 {
			wait = max(l.h.peek().at.Sub(l.s.now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		l.wake(ctx)
	}
}

// schedule puts p's first slot after now in the heap, plus the slots of the
// last starting deadline that its catch_up policy still tries.
func (l *loop) schedule(p *plan, now time.Time) {
	if next := p.sched.Next(now); !next.IsZero() {
		l.h.push(&entry{at: next, p: p, slot: next, kind: fire})
	}
	keep := 0
	switch p.catchUp {
	case "latest":
		keep = 1
	case "all":
		keep = p.catchUpLimit
	}
	from := now.Add(-p.deadline)
	var recent []time.Time // newest first
	for s := p.sched.Prev(now); !s.IsZero() && !s.Before(from); s = p.sched.Prev(s.Add(-time.Second)) {
		recent = append(recent, s)
	}
	for i, s := range recent {
		if i < keep || s.Equal(now) {
			l.h.push(&entry{at: now, p: p, slot: s, kind: retry})
		} else {
			l.s.log.Debug("slot not caught up", "job", p.name, "slot", s.Format(time.RFC3339), "catch_up", p.catchUp)
		}
	}
}

// wake pops every due entry and claims the slots still worth claiming in
// batches.
func (l *loop) wake(ctx context.Context) {
	now := l.s.now()
	var batch []*entry
	for len(l.h) > 0 && !l.h.peek().at.After(now) {
		e := l.h.pop()
		if e.kind == fire {
			if next := e.p.sched.Next(e.slot); !next.IsZero() {
				l.h.push(&entry{at: next, p: e.p, slot: next, kind: fire})
			}
			if lag := now.Sub(e.at); lag > time.Second {
				l.s.log.Debug("timer lag", "job", e.p.name, "lag", lag)
			}
		}
		if e.kind != watch && now.After(e.slot.Add(e.p.deadline)) {
			reason := "late"
			if e.tries > 0 {
				reason = "store unavailable"
			}
			l.s.log.Warn("slot missed", "job", e.p.name, "slot", e.slot.Format(time.RFC3339), "replica", l.s.replica,
				"reason", reason, "late_by", now.Sub(e.slot).Round(time.Millisecond))
			continue
		}
		batch = append(batch, e)
	}
	for len(batch) > 0 && ctx.Err() == nil {
		n := min(len(batch), maxBatch)
		l.claim(ctx, batch[:n])
		batch = batch[n:]
	}
}

// claim sends one batch and acts on every result.
func (l *loop) claim(ctx context.Context, batch []*entry) {
	reqs := make([]slotstore.ClaimRequest, len(batch))
	for i, e := range batch {
		reqs[i] = slotstore.ClaimRequest{
			Job: e.p.name, Slot: e.slot, Lease: e.p.lease, OnCrash: e.p.onCrash,
			MaxAttempts: e.p.maxAtt, Retain: e.p.history,
		}
	}
	sent := time.Now()
	cctx, cancel := context.WithTimeout(ctx, claimTimeout(batch))
	results, err := l.s.store.Claim(cctx, slotstore.ClaimParams{Replica: l.s.replica, Requests: reqs})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		l.s.log.Warn("claim failed", "slots", len(batch), "replica", l.s.replica, "err", err,
			"outcome_unknown", slotstore.IsOutcomeUnknown(err))
		for _, e := range batch {
			e.tries++
			if e.kind == fire {
				e.kind = retry
			}
			e.at = l.s.now().Add(backoff(e.tries))
			l.h.push(e)
		}
		return
	}
	for i, e := range batch {
		l.result(e, results[i], sent)
	}
}

func (l *loop) result(e *entry, r slotstore.ClaimResult, sent time.Time) {
	attrs := []any{"job", e.p.name, "slot", e.slot.Format(time.RFC3339), "replica", l.s.replica}
	// A slot's first decision is worth a line; re-checks of a watched slot
	// are not.
	level := slog.LevelInfo
	if e.kind == watch {
		level = slog.LevelDebug
	}
	switch r.Status {
	case slotstore.Won:
		l.active.Add(1)
		l.runs.Go(func() {
			defer l.active.Add(-1)
			l.s.execute(l.runCtx, e.p, r.Claim, sent)
		})
	case slotstore.Held:
		l.s.log.Log(context.Background(), level, "slot lost", append(attrs, "holder", r.Marker.Holder,
			"fence", r.Marker.Fence, "attempt", r.Marker.Attempt, "remaining", r.Remaining.Round(time.Millisecond))...)
		// Claim again exactly when the holder's lease ends, by the store's
		// reckoning, so a dead holder's slot is taken over at once; and at
		// least every renewal interval, so a slot released by a holder that
		// shut down is taken over within one interval.
		wait := max(min(r.Remaining-time.Since(sent), e.p.lease/3), time.Millisecond)
		l.h.push(&entry{at: l.s.now().Add(wait), p: e.p, slot: e.slot, kind: watch})
	case slotstore.Finished:
		l.s.log.Log(context.Background(), level, "slot lost", append(attrs, "holder", r.Marker.Holder,
			"fence", r.Marker.Fence, "state", r.Marker.State, "outcome", r.Marker.Outcome)...)
	case slotstore.Abandoned:
		l.s.log.Warn("slot abandoned", append(attrs, "holder", r.Marker.Holder, "attempt", r.Marker.Attempt,
			"on_crash", e.p.onCrash)...)
	}
}

// backoff is the wait before claim attempt tries+1 after a store error.
func backoff(tries int) time.Duration {
	d := 250 * time.Millisecond << min(tries-1, 6)
	return min(d, 10*time.Second)
}

// claimTimeout bounds one claim call: long enough for a big batch, short
// enough that a hung store does not stall the loop past a lease.
func claimTimeout(batch []*entry) time.Duration {
	d := 5 * time.Second
	for _, e := range batch {
		d = min(d, e.p.lease/2)
	}
	return d
}
