package scheduler

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// maxMissedRecords bounds the slots one start-up records as missed per job.
const maxMissedRecords = 1000

// schedule puts p's first slot after now in the heap and applies catch_up
// to what came due while this replica was not running:
//
//   - slots of the last starting deadline: catch_up none tries none (but a
//     slot due this very second), latest the newest, all up to
//     catch_up_limit of the newest; the others are left to replicas that
//     are up — or, when they are newer than the job's newest marker (no
//     replica claimed them: every replica was down), recorded skipped with
//     reason "catch_up <policy>", so history shows them;
//   - slots older than that, back to the job's newest marker, can no longer
//     start: they are recorded skipped with reason "missed: no replica
//     claimed it in time", so a nightly job missed in an outage is visible.
func (l *loop) schedule(ctx context.Context, p *plan, now time.Time) {
	if next := p.sched.Next(now); !next.IsZero() {
		l.h.push(&entry{at: next.Add(p.jitter), p: p, slot: next, kind: fire})
		l.s.metrics.nextRun.WithLabelValues(p.name).Set(seconds(next))
	}
	keep := 0
	switch p.catchUp {
	case "latest":
		keep = 1
	case "all":
		keep = p.catchUpLimit
	}
	from := now.Add(-p.deadline)
	newest, known := l.newestSlot(ctx, p)
	var recent []time.Time // newest first
	for s := p.sched.Prev(now); !s.IsZero() && !s.Before(from); s = p.sched.Prev(s.Add(-time.Second)) {
		recent = append(recent, s)
	}
	// A slot newer than the job's newest marker, and more than a second
	// old, was claimed by no replica at its time: the replicas were down,
	// and this one may decide for them. A newer slot may be mid-claim
	// elsewhere and is left alone.
	unclaimed := func(s time.Time) bool { return known && s.After(newest) && s.Before(now.Add(-time.Second)) }
	var skips []slotstore.SkipRequest
	for i, s := range recent {
		if i < keep || s.Equal(now) {
			at := s.Add(p.jitter)
			if at.Before(now) {
				at = now
			}
			l.h.push(&entry{at: at, p: p, slot: s, kind: retry})
			continue
		}
		l.s.log.Info("slot not caught up", "job", p.name, "slot", s.Format(time.RFC3339), "catch_up", p.catchUp)
		if unclaimed(s) {
			skips = append(skips, slotstore.SkipRequest{Job: p.name, Slot: s, Reason: "catch_up " + p.catchUp, Retain: p.history})
			l.s.metrics.missed.WithLabelValues(p.name, "catch_up").Inc()
		}
	}
	if known {
		n := 0
		for s := p.sched.Next(newest); !s.IsZero() && s.Before(from); s = p.sched.Next(s) {
			if n == maxMissedRecords {
				l.s.log.Warn("more missed slots than recorded", "job", p.name, "recorded", n, "until", from.Format(time.RFC3339))
				break
			}
			skips = append(skips, slotstore.SkipRequest{Job: p.name, Slot: s, Reason: "missed: no replica claimed it in time", Retain: p.history})
			l.s.log.Warn("slot missed", "job", p.name, "slot", s.Format(time.RFC3339), "replica", l.s.replica, "reason", "no replica claimed it in time")
			l.s.metrics.missed.WithLabelValues(p.name, "down").Inc()
			n++
		}
	}
	l.skip(ctx, skips)
}

// newestSlot is the slot of p's newest marker, if the store has one.
func (l *loop) newestSlot(ctx context.Context, p *plan) (time.Time, bool) {
	sctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
	defer cancel()
	ms, err := l.s.store.History(sctx, slotstore.HistoryParams{Job: p.name, Limit: 1})
	l.s.metrics.storeCall(err)
	if err != nil || len(ms) == 0 {
		if err != nil && ctx.Err() == nil {
			l.s.log.Warn("reading the newest slot failed", "job", p.name, "err", err)
		}
		return time.Time{}, false
	}
	return ms[0].Slot, true
}

// skip records slots as skipped, in batches; a slot that has a marker is
// left alone by the store.
func (l *loop) skip(ctx context.Context, reqs []slotstore.SkipRequest) {
	for len(reqs) > 0 && ctx.Err() == nil {
		n := min(len(reqs), maxBatch)
		sctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
		_, err := l.s.store.Skip(sctx, slotstore.SkipParams{Replica: l.s.replica, Requests: reqs[:n]})
		cancel()
		l.s.metrics.storeCall(err)
		if err != nil && ctx.Err() == nil {
			l.s.log.Warn("recording skipped slots failed", "slots", n, "err", err)
		}
		reqs = reqs[n:]
	}
}

// dropPaused removes the entries of paused jobs from a batch before it is
// claimed and records their slots skipped with reason "paused". Watches
// (takeovers of slots already claimed, and retries) go on. If the pauses
// cannot be read, nothing is dropped: the claims will meet the same store.
func (l *loop) dropPaused(ctx context.Context, batch []*entry) []*entry {
	fresh := false
	for _, e := range batch {
		fresh = fresh || e.kind != watch
	}
	if !fresh {
		return batch
	}
	pctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
	defer cancel()
	ps, err := l.s.store.Pauses(pctx)
	if err != nil {
		return batch
	}
	paused := map[string]bool{}
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	if !ps.All && len(paused) == 0 {
		return batch
	}
	kept := batch[:0]
	var skips []slotstore.SkipRequest
	for _, e := range batch {
		if e.kind == watch || (!ps.All && !paused[e.p.name]) {
			kept = append(kept, e)
			continue
		}
		l.s.log.Info("slot skipped", "job", e.p.name, "slot", e.slot.Format(time.RFC3339), "replica", l.s.replica, "reason", "paused")
		l.s.metrics.missed.WithLabelValues(e.p.name, "paused").Inc()
		skips = append(skips, slotstore.SkipRequest{Job: e.p.name, Slot: e.slot, Reason: "paused", Retain: e.p.history})
	}
	l.skip(ctx, skips)
	return kept
}
