package engine

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// maxMissedRecords bounds the slots of one job a start-up records as missed,
// and those it records as not caught up.
const maxMissedRecords = 1000

// schedule puts p's first slot after now in the heap and applies catch_up
// to what came due while this replica was not running:
//
//   - slots of the last starting deadline: catch_up none tries none (but a
//     slot due this very second), latest the newest, all up to
//     catch_up_limit of the newest; the others are left to the replicas
//     that are up, and when their starting window has closed for every
//     replica with no claim, recorded skipped with reason
//     "catch_up <policy>", so history shows them;
//   - slots older than that, back to the job's newest marker, can no longer
//     start: they are recorded skipped with reason "missed: no replica
//     claimed it in time", so a nightly job missed in an outage is visible.
//
// It walks the slots lazily and records at most maxMissedRecords of each
// kind, so its cost is bounded by the policy (catch_up_limit, at most
// MaxCatchUpLimit) and not by how many slots the window holds. newest is
// the slot of the job's newest marker (zero for none), which enroll read; it
// returns the slots to record skipped now, which the caller sends in
// batches with every other job's.
func (l *loop) schedule(p *plan, now, newest time.Time) []slotstore.SkipRequest {
	// The oldest slot not yet due (jitter tries a slot after it) starts the
	// job's chain of fire entries, each of which pushes the next: slots of
	// the window still waiting for their try are ordinary slots, pushed one
	// at a time however many fall in the jitter.
	if next := p.sched.Next(now.Add(-p.jitter)); !next.IsZero() {
		l.h.push(&entry{at: next.Add(p.jitter), p: p, slot: next, kind: fire})
		l.s.metrics.next(p).Set(seconds(next))
		l.s.metrics.scheduled(p, now)
	}
	keep := 0
	switch p.catchUp {
	case policy.CatchUpLatest:
		keep = 1
	case policy.CatchUpAll:
		keep = p.catchUpLimit
	}
	from := now.Add(-p.deadline)
	known := !newest.IsZero()
	var skips []slotstore.SkipRequest
	// lapseAt is when no replica may start s any more: its starting window
	// has closed on every clock within a second of this one.
	lapseAt := func(s time.Time) time.Time { return s.Add(p.deadline + time.Second) }
	// Walk back from the newest slot already due, one slot at a time: the
	// slots the policy runs, then those it leaves, at most maxMissedRecords
	// of them, so neither memory nor time grows with the slots a long
	// window holds.
	caught, recorded := 0, 0
	for s := p.sched.Prev(now.Add(-p.jitter)); !s.IsZero() && !s.Before(from); s = p.sched.Prev(s.Add(-time.Second)) {
		due := s.Add(p.jitter)
		if caught < keep || now.Sub(due) < time.Second {
			// The newest due slots as the policy says, and always one due
			// this very second.
			caught++
			l.h.push(&entry{at: now, p: p, slot: s, kind: retry})
			continue
		}
		// Left to the replicas that are up; if none claims it before its
		// window closes, history records why it did not run. Slots before
		// the job's newest marker (or any, for a job with no history yet)
		// are from before the cluster ran it: not worth a record, and
		// every older slot is one of them.
		if !known || !s.After(newest) {
			l.s.log.Debug("slots not caught up", "job", p.name, "newest", s.Format(time.RFC3339),
				"window_start", from.Format(time.RFC3339), "catch_up", p.catchUp)
			break
		}
		if recorded == maxMissedRecords {
			l.s.log.Warn("more slots not caught up than recorded", "job", p.name, "recorded", recorded,
				"until", s.Format(time.RFC3339), "catch_up", p.catchUp)
			break
		}
		recorded++
		l.s.log.Info("slot not caught up", "job", p.name, "slot", s.Format(time.RFC3339), "catch_up", p.catchUp)
		l.h.push(&entry{at: lapseAt(s), p: p, slot: s, kind: lapse, reason: catchUpPrefix + string(p.catchUp)})
	}
	if !known {
		return nil
	}
	n := 0
	for s := p.sched.Next(newest); !s.IsZero() && s.Before(from); s = p.sched.Next(s) {
		if n == maxMissedRecords {
			l.s.log.Warn("more missed slots than recorded", "job", p.name, "recorded", n, "until", from.Format(time.RFC3339))
			break
		}
		n++
		if at := lapseAt(s); at.After(now) {
			l.h.push(&entry{at: at, p: p, slot: s, kind: lapse, reason: reasonDown})
			continue
		}
		skips = append(skips, p.missedSkip(s, reasonDown))
	}
	return skips
}

const (
	// reasonPaused is the reason of a slot skipped while its job is paused.
	reasonPaused = "paused"
	// reasonLate and reasonUnavailable are the reasons of a slot whose
	// window closed, by this replica's clock, before it was claimed: the
	// replica woke too late, or the store did not answer its claims.
	reasonLate        = "missed: late"
	reasonUnavailable = "missed: store unavailable"
	// reasonDown is the reason of a slot that came due while no replica
	// ran its job.
	reasonDown = "missed: no replica claimed it in time"
	// catchUpPrefix begins the reason of a slot the job's catch-up policy
	// left: "catch_up none", "catch_up latest"...
	catchUpPrefix = "catch_up "
)

// missedReason is the reason label slots_missed_total counts a slot this
// replica recorded skipped with reason under, or "" for a reason it does
// not count here (overlap and data loss are counted where a claim records
// them).
func missedReason(reason string) string {
	switch {
	case reason == reasonPaused:
		return "paused"
	case reason == reasonLate:
		return "late"
	case reason == reasonUnavailable:
		return "store unavailable"
	case reason == reasonDown:
		return "down"
	case strings.HasPrefix(reason, catchUpPrefix):
		return "catch up"
	}
	return ""
}

// missedSkip is the request that records slot of p skipped with reason
// because its starting window closed: the store records it only once its
// own clock has passed the window too (guarantee 7), so a replica whose
// clock runs fast cannot take the slot from the others.
func (p *plan) missedSkip(slot time.Time, reason string) slotstore.SkipRequest {
	return slotstore.SkipRequest{Job: p.name, Slot: slot, Reason: reason, Retain: p.history, NotBefore: slot.Add(p.deadline)}
}

// skip records slots as skipped, in batches; a slot that has a marker is
// left alone by the store. A slot whose starting window is still open by
// the store's clock is recorded when it closes (a lapse entry), if no
// replica has claimed it by then.
func (l *loop) skip(ctx context.Context, reqs []slotstore.SkipRequest) {
	for len(reqs) > 0 && ctx.Err() == nil {
		n := min(len(reqs), maxBatch)
		sent := time.Now()
		sctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
		res, err := l.st.Skip(sctx, slotstore.SkipParams{Replica: l.s.replica, Requests: reqs[:n]})
		cancel()
		l.s.metrics.storeCall(err)
		if err != nil && ctx.Err() == nil {
			l.s.log.Warn("recording skipped slots failed", "slots", n, "err", err)
		}
		var recorded []slotstore.SkipRequest
		for i, r := range res {
			if i >= n {
				break
			}
			q := reqs[i]
			p := l.s.byName[q.Job]
			if p == nil {
				continue
			}
			if r.Status == slotstore.Skipped && r.Marker.Holder == l.s.replica && r.Marker.Reason == q.Reason {
				// Counted once in the cluster, by the replica whose skip
				// recorded it: a replica that only judged the slot missed
				// (it woke late, its clock was set) while another ran it
				// counts nothing.
				if reason := missedReason(q.Reason); reason != "" {
					l.s.metrics.missed.WithLabelValues(q.Job, reason).Inc()
				}
				recorded = append(recorded, q)
				continue
			}
			if r.Status == slotstore.Held {
				// Claimed meanwhile by a replica that may die: watch it, as
				// a replica whose claim lost does.
				l.push(&entry{p: p, slot: q.Slot, kind: watch}, l.s.now().Add(min(r.Remaining, p.lease/3)))
				continue
			}
			if r.Status != slotstore.NotYet {
				continue
			}
			at := l.s.now().Add(r.Remaining + time.Millisecond)
			if q.Reason == reasonPaused {
				// Not yet due by the store's clock: try the slot again then,
				// as a claim, so a resume in between lets it run.
				l.s.log.Debug("paused slot not due yet by the store's clock", "job", q.Job, "slot", q.Slot.Format(time.RFC3339), "remaining", r.Remaining.Round(time.Millisecond))
				l.h.push(&entry{at: at, p: p, slot: q.Slot, kind: retry})
				continue
			}
			if q.Reason == reasonLate || q.Reason == reasonUnavailable {
				// This replica judged the window closed by its own clock,
				// which runs ahead of the store's: claim the slot when it is
				// due by the store's clock, and judge its window by that
				// clock too, so a replica whose clock runs fast by more
				// than the deadline still takes its share of the slots.
				closes := sent.Add(r.Remaining)
				due := time.Until(closes.Add(-p.deadline)) + p.jitter
				l.s.log.Info("slot not missed yet by the store's clock; claiming it when due by that clock", "job", q.Job,
					"slot", q.Slot.Format(time.RFC3339), "remaining", r.Remaining.Round(time.Millisecond))
				l.h.push(&entry{at: l.s.now().Add(max(due, 0)), p: p, slot: q.Slot, kind: retry, closes: closes})
				continue
			}
			l.s.log.Info("slot not missed yet by the store's clock", "job", q.Job, "slot", q.Slot.Format(time.RFC3339), "remaining", r.Remaining.Round(time.Millisecond))
			l.h.push(&entry{at: at, p: p, slot: q.Slot, kind: lapse, reason: q.Reason})
		}
		l.logMissed(recorded)
		reqs = reqs[n:]
	}
}

// burstLines is how many slots of one job and reason are logged a line
// each; more are logged as one summary line.
const burstLines = 3

// logMissed logs the missed slots this replica's skips recorded: one line
// per slot in the cluster (the replicas whose skip found the marker there
// say nothing), and one line for a burst of a job's slots missed for one
// reason, such as the slots of an outage.
func (l *loop) logMissed(recorded []slotstore.SkipRequest) {
	type burst struct {
		job, reason string
		slots       []time.Time
	}
	var order []*burst
	bursts := map[[2]string]*burst{}
	for _, q := range recorded {
		reason, ok := strings.CutPrefix(q.Reason, "missed: ")
		if !ok {
			continue // paused and catch-up records are logged where decided
		}
		k := [2]string{q.Job, reason}
		b := bursts[k]
		if b == nil {
			b = &burst{job: q.Job, reason: reason}
			bursts[k] = b
			order = append(order, b)
		}
		b.slots = append(b.slots, q.Slot)
	}
	now := l.s.now()
	for _, b := range order {
		if len(b.slots) <= burstLines {
			for _, s := range b.slots {
				l.s.log.Warn("slot missed", "job", b.job, "slot", s.Format(time.RFC3339), "reason", b.reason,
					"late_by", now.Sub(s).Round(time.Millisecond))
			}
			continue
		}
		slices.SortFunc(b.slots, time.Time.Compare)
		l.s.log.Warn("slots missed", "job", b.job, "count", len(b.slots), "first", b.slots[0].Format(time.RFC3339),
			"last", b.slots[len(b.slots)-1].Format(time.RFC3339), "reason", b.reason)
	}
}

// dropPaused removes the entries of paused jobs from a batch before it is
// claimed and records their slots skipped with reason "paused". Watches
// (takeovers of slots already claimed, and retries) go on. The pauses come
// from the loop's latest read when it is fresh (sent less than pauseFresh
// ago), which the loop sends ahead of the slots. Otherwise a read is sent,
// and the new entries wait for its answer, put back a moment later: the
// loop goroutine never waits on the store for them, so a store slow to
// answer holds up no takeover and no run's report. While reads fail, new
// entries wait with backoff: a pause must not fail open.
func (l *loop) dropPaused(ctx context.Context, batch []*entry) []*entry {
	fresh := false
	for _, e := range batch {
		fresh = fresh || e.kind != watch
	}
	if !fresh {
		return batch
	}
	c := &l.pauses
	// A read the waiting entries asked for answers them whatever its age;
	// a read sent ahead answers them while fresh. A slot to skip wants the
	// former: skipping is final, so a resume made since must be seen.
	usable := func() bool {
		ok := c.fresh(time.Now()) || (!c.waitingSince.IsZero() && !c.sent.Before(c.waitingSince) && !c.stale.Load())
		return ok && (!c.waitingSince.IsZero() || !slices.ContainsFunc(batch, func(e *entry) bool {
			return e.kind != watch && (c.ps.All || slices.Contains(c.ps.Jobs, e.p.name))
		}))
	}
	if !usable() {
		now := time.Now()
		if c.waitingSince.IsZero() {
			c.waitingSince = now
		}
		if !c.reading && !now.Before(c.retryAt) {
			l.readPauses(ctx)
		}
		if c.reading {
			// Most reads answer at once: wait a moment for this one here,
			// and no longer.
			t := time.NewTimer(pauseWait)
			select {
			case r := <-c.reads:
				l.notePauses(r)
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
	if !usable() {
		now := time.Now()
		at := l.s.now().Add(pauseWait)
		if c.failures > 0 {
			at = l.s.now().Add(max(c.retryAt.Sub(now), pauseWait))
		}
		kept := batch[:0]
		for _, e := range batch {
			if e.kind == watch {
				kept = append(kept, e)
				continue
			}
			if c.failures > 0 {
				e.tries++ // missed past its window: "store unavailable"
			}
			if e.kind == fire {
				e.kind = retry
			}
			l.push(e, at)
		}
		return kept
	}
	c.waitingSince = time.Time{}
	ps := l.pauses.ps
	if !ps.All && len(ps.Jobs) == 0 {
		return batch
	}
	paused := make(map[string]bool, len(ps.Jobs))
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	kept := batch[:0]
	var skips []slotstore.SkipRequest
	for _, e := range batch {
		if e.kind == watch || (!ps.All && !paused[e.p.name]) {
			kept = append(kept, e)
			continue
		}
		l.s.log.Info("slot skipped", "job", e.p.name, "slot", e.slot.Format(time.RFC3339), "reason", "paused")
		// Not before its slot by the store's clock: a replica whose clock
		// runs fast must not erase slots a resume may still let run.
		skips = append(skips, slotstore.SkipRequest{Job: e.p.name, Slot: e.slot, Reason: reasonPaused, Retain: e.p.history,
			NotBefore: e.slot})
	}
	l.skip(ctx, skips)
	return kept
}
