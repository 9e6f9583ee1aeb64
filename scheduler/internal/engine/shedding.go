// Skipped slots: recording them in the store and acting on its answers,
// and the recorder, a goroutine of its own that records the slots the loop
// sheds under overload (admit.go), so a loop that sheds a hundred thousand
// slots a second does not wait on the store for each batch of their
// records while new slots come due.

package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// shedQueue bounds the batches of shed slots handed to the recorder
	// and not yet recorded (at most 64,000 slots, 7 MB of requests); the
	// loop records a batch it has no room for itself (recordShed).
	shedQueue = 64
	// drainFor bounds how long, as Run ends, the recorder goes on with the
	// batches queued for it: Run's runs wait for it before their grace.
	drainFor = 250 * time.Millisecond
)

// shedRecorder is the goroutine that records the slots the loop sheds. in
// carries batches of at most maxBatch from the loop; back carries to the
// loop the answers it must act on itself (followSkips). Both are nil while
// no recorder runs (the start-up, and loops that tests drive by hand): the
// loop records shed slots itself then.
type shedRecorder struct {
	in   chan []slotstore.SkipRequest
	back chan []skipAnswer
}

// skipAnswer is the store's answer to the skip of one slot, with what acting
// on it needs.
type skipAnswer struct {
	q         slotstore.SkipRequest
	p         *plan
	status    slotstore.Status
	remaining time.Duration
	// sent is when the skip was sent, and arrived when its answer came
	// (monotonic).
	sent, arrived time.Time
}

// startRecorder starts l's recorder, until ctx ends. The batches queued
// then, until the loop closes rec.in, are recorded for at most drainFor,
// and their answers that want the loop let go: the loop has ended. The
// batch under way as ctx ends, and overtaken slots not handed on yet, are
// not recorded (a replica's sweep records them later).
func (l *loop) startRecorder(ctx context.Context) {
	l.rec = shedRecorder{in: make(chan []slotstore.SkipRequest, shedQueue), back: make(chan []skipAnswer, shedQueue)}
	l.bg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				l.drainRecorder(ctx)
				return
			case reqs := <-l.rec.in:
				if ctx.Err() != nil {
					l.drainRecorder(ctx, reqs...) // taken as the loop ended
					return
				}
				later := l.recordSkips(ctx, reqs)
				if len(later) == 0 {
					continue
				}
				select {
				case l.rec.back <- later:
				case <-ctx.Done():
					l.drainRecorder(ctx)
					return
				}
			}
		}
	})
}

// drainRecorder records first and the batches left in the recorder's
// queue as the loop ends (ctx, ended), until the loop closes the queue or
// drainFor has passed.
func (l *loop) drainRecorder(ctx context.Context, first ...slotstore.SkipRequest) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainFor)
	defer cancel()
	if len(first) > 0 {
		l.recordSkips(dctx, first)
	}
	for {
		select {
		case reqs, ok := <-l.rec.in:
			if !ok {
				return
			}
			l.recordSkips(dctx, reqs)
		case <-dctx.Done():
			return
		}
	}
}

// recordShed records the slots admission shed, on the recorder when one
// runs and its queue has room; when it has none the loop records the batch
// itself, as it does with no recorder: a recorder that falls behind slows
// the loop, and with it the runs it starts, rather than letting unrecorded
// slots pile up.
func (l *loop) recordShed(ctx context.Context, reqs []slotstore.SkipRequest) {
	l.skipVia(ctx, reqs, l.rec.in)
}

// skip records slots as skipped, in batches; a slot that has a marker is
// left alone by the store. A slot whose starting window is still open by
// the store's clock is recorded when it closes (a lapse entry), if no
// replica has claimed it by then.
func (l *loop) skip(ctx context.Context, reqs []slotstore.SkipRequest) { l.skipVia(ctx, reqs, nil) }

// skipVia records reqs in batches of at most maxBatch, each handed to to
// when it has room, recorded here otherwise (a nil to never has room).
func (l *loop) skipVia(ctx context.Context, reqs []slotstore.SkipRequest, to chan<- []slotstore.SkipRequest) {
	for len(reqs) > 0 && ctx.Err() == nil {
		n := min(len(reqs), maxBatch)
		select {
		case to <- reqs[:n:n]:
		default:
			l.followSkips(l.recordSkips(ctx, reqs[:n]))
		}
		reqs = reqs[n:]
	}
}

// recordSkips sends one batch of skips (at most maxBatch) and acts on the
// answers that touch none of the loop's state: counting and logging what
// it recorded, and a spec superseded. It may run off the loop goroutine. It
// returns the answers the loop must act on (followSkips).
func (l *loop) recordSkips(ctx context.Context, reqs []slotstore.SkipRequest) []skipAnswer {
	sent := time.Now()
	sctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
	res, err := l.st.Skip(sctx, slotstore.SkipParams{Replica: l.s.replica, Requests: reqs})
	cancel()
	arrived := time.Now()
	l.s.metrics.storeCall(err)
	if err != nil && ctx.Err() == nil {
		l.s.log.Warn("recording skipped slots failed", "slots", len(reqs), "err", err)
	}
	var recorded []slotstore.SkipRequest
	var later []skipAnswer
	for i, r := range res {
		if i >= len(reqs) {
			break
		}
		q := reqs[i]
		p := l.s.jobs().plan(q.Job)
		if p == nil {
			continue
		}
		switch {
		case r.Status == slotstore.Skipped && r.Marker.Holder == l.s.replica && r.Marker.Reason == q.Reason:
			// Counted once in the cluster, by the replica whose skip
			// recorded it: a replica that only judged the slot missed
			// (it woke late, its clock was set) while another ran it
			// counts nothing.
			if reason := missedReason(q.Reason); reason != "" {
				l.s.metrics.missed.WithLabelValues(p.metricJob(), reason).Inc()
			}
			recorded = append(recorded, q)
		case q.Reason == reasonPaused && r.Status == slotstore.Skipped:
			l.logSkipped(slog.LevelDebug, q, r.Marker) // another replica's skip recorded it
		case r.Status == slotstore.Superseded:
			if p.spec.Fingerprint == q.Spec {
				l.s.superseded(p) // not a plan a reload replaced since the skip was made
			}
		case r.Status == slotstore.Held || r.Status == slotstore.NotYet:
			later = append(later, skipAnswer{q: q, p: p, status: r.Status, remaining: r.Remaining, sent: sent, arrived: arrived})
		}
	}
	l.logMissed(recorded)
	return later
}

// followSkips acts, on the loop goroutine, on the answers of skips that
// want more of it: a slot claimed meanwhile is watched, one not due or not
// missed yet by the store's clock is looked at again then.
func (l *loop) followSkips(answers []skipAnswer) {
	for _, a := range answers {
		q, p := a.q, a.p
		// What remained when the store answered, less the time since: an
		// answer of the recorder may come to the loop a while later.
		left := max(a.remaining-time.Since(a.arrived), 0)
		if a.status == slotstore.Held {
			// Claimed meanwhile by a replica that may die: watch it, as
			// a replica whose claim lost does.
			l.push(&entry{p: p, slot: q.Slot, kind: watch}, l.s.now().Add(max(min(left, p.lease/3), time.Millisecond)))
			continue
		}
		at := l.s.now().Add(left + time.Millisecond)
		switch q.Reason {
		case reasonPaused:
			// Not yet due by the store's clock: try the slot again then,
			// as a claim, so a resume in between lets it run.
			l.s.log.Debug("paused slot not due yet by the store's clock", "job", q.Job, "slot", q.Slot.Format(time.RFC3339),
				"remaining", a.remaining.Round(time.Millisecond))
			l.h.push(&entry{at: at, p: p, slot: q.Slot, kind: retry})
		case reasonLate, reasonUnavailable:
			// This replica judged the window closed by its own clock,
			// which runs ahead of the store's: claim the slot when it is
			// due by the store's clock, and judge its window by that
			// clock too, so a replica whose clock runs fast by more
			// than the deadline still takes its share of the slots.
			closes := a.sent.Add(a.remaining)
			due := time.Until(closes.Add(-p.deadline)) + p.jitter
			l.s.log.Info("slot not missed yet by the store's clock; claiming it when due by that clock", "job", q.Job,
				"slot", q.Slot.Format(time.RFC3339), "remaining", a.remaining.Round(time.Millisecond))
			l.h.push(&entry{at: l.s.now().Add(max(due, 0)), p: p, slot: q.Slot, kind: retry, closes: closes})
		default:
			l.s.log.Info("slot not missed yet by the store's clock", "job", q.Job, "slot", q.Slot.Format(time.RFC3339),
				"remaining", a.remaining.Round(time.Millisecond))
			l.h.push(&entry{at: at, p: p, slot: q.Slot, kind: lapse, reason: q.Reason})
		}
	}
}
