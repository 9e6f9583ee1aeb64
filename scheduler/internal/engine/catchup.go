// Start-up and missed slots: enrolling the jobs, each job's first slot and
// the catch-up of what came due while this replica was down, and the
// records of slots skipped or missed (their log lines: missedlog.go).

package engine

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// maxMissedRecords bounds the slots of one job a start-up records as missed,
// and those it records as not caught up.
const maxMissedRecords = 1000

// clockMargin is how far apart the clocks of a replica and its store may
// be for the rules that compare a slot or a generation, by the store's
// clock, with this replica's: a slot older than the job's history less it
// may have had its marker pruned (catch-up and backfill leave it alone), and
// a generation born up to it before this start-up's enrolment was begun by
// that enrolment.
const clockMargin = time.Minute

// enroll enrolls plans in the store before their first claim, so that the
// store knows how far back its record of each job goes, and offers each
// job's spec to the catalog; it returns each job's generation, with the
// slot of its newest marker and the spec in force, read in the same
// batches. It retries until the store answers or ctx ends, and reports
// which. The loop enrolls every job at start-up; Reload, the jobs a reload
// adds or changes, on its caller's goroutine.
func (s *Engine) enroll(ctx context.Context, st slotstore.Store, plans []*plan) (map[string]slotstore.Generation, bool) {
	// The configuration's jobs with their specs; the schedules held as
	// data without: their specs are the store's, and an enrolment with one
	// could put it in force again over a delete made meanwhile.
	var config, held []*plan
	for _, p := range plans {
		if p.run == "" {
			config = append(config, p)
		} else {
			held = append(held, p)
		}
	}
	out := make(map[string]slotstore.Generation, len(plans))
	return out, s.enrollSome(ctx, st, config, true, out) && s.enrollSome(ctx, st, held, false, out)
}

// enrollSome enrolls plans, with their specs when withSpecs, into out; it
// retries until the store answers or ctx ends, and reports which.
func (s *Engine) enrollSome(ctx context.Context, st slotstore.Store, plans []*plan, withSpecs bool, out map[string]slotstore.Generation) bool {
	names := make([]string, len(plans))
	specs := make([]slotstore.Spec, len(plans))
	byName := make(map[string]*plan, len(plans))
	for i, p := range plans {
		names[i], specs[i], byName[p.name] = p.name, p.spec, p
	}
	for tries := 1; ; tries++ {
		for len(names) > 0 {
			n := min(len(names), maxBatch)
			ectx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
			sent := s.now()
			p := slotstore.EnrollParams{Jobs: names[:n], Replica: s.replica}
			if withSpecs {
				p.Specs = specs[:n]
			}
			gens, err := st.Enroll(ectx, p)
			cancel()
			for _, g := range gens {
				s.noteGeneration(byName[g.Job], g, sent)
				out[g.Job] = g
			}
			s.metrics.storeCall(err)
			if err != nil {
				if ctx.Err() != nil {
					return false
				}
				s.log.Warn("enrolling the jobs failed; retrying", "err", err, "try", tries)
				break
			}
			names, specs = names[n:], specs[n:]
		}
		if len(names) == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff(tries)):
		}
	}
}

// noteGeneration takes in g, p's generation as an enrolment sent at sent
// answered it: its spec in force, and whether the enrolment began it.
func (s *Engine) noteGeneration(p *plan, g slotstore.Generation, sent time.Time) {
	s.noteSpec(p, g.Spec)
	// Begun by this enrolment (give or take the clocks, whose skew
	// clockMargin bounds): the store has just started to record the job,
	// so slots before it were never the job's (wake records them so);
	// skipping them is no news. Taking a generation another start-up, or a
	// claim after a loss, began within the margin for this one's is safe:
	// no claim can win a slot before Born, so all that changes is the
	// reason its record gives.
	p.newSince = time.Time{}
	if g.Born.After(sent.Add(-clockMargin)) {
		p.newSince = g.Born
	}
}

// schedule puts p's first slot after now in the heap and applies catch_up
// to what came due while this replica was not running:
//
//   - slots of the last starting deadline: catch_up none tries none (but a
//     slot due this very second), latest the newest, all up to
//     catch_up_limit of the newest; the others are left to the replicas
//     that are up, and when their starting window has closed for every
//     replica with no claim, recorded skipped with reason
//     "catch_up <policy>", so history shows them;
//   - slots older than that, back to the first the store's record of the
//     job owes (owedFrom), can no longer start: they are recorded skipped
//     with reason "missed: no replica claimed it in time", so a nightly job
//     missed in an outage is visible, also one that has never run.
//
// It walks the slots lazily and records at most maxMissedRecords of each
// kind, so its cost is bounded by the policy (catch_up_limit, at most
// MaxCatchUpLimit) and not by how many slots the window holds. g is the
// job's generation, with the slot of its newest marker, which enroll read;
// it returns the slots to record skipped now, which the caller sends in
// batches with every other job's.
func (l *loop) schedule(p *plan, now time.Time, g slotstore.Generation) []slotstore.SkipRequest {
	// The oldest slot not yet due (jitter tries a slot after it) starts the
	// job's chain of fire entries, each of which pushes the next: slots of
	// the window still waiting for their try are ordinary slots, pushed one
	// at a time however many fall in the jitter.
	if next := p.sched.Next(now.Add(-p.jitter)); !next.IsZero() {
		l.h.push(&entry{at: p.fireAt(next), p: p, slot: next, kind: fire})
		l.s.metrics.next(p, next)
		l.s.metrics.scheduled(p, now)
	} else {
		l.noteEnded(p)
	}
	if p.inConflict() {
		return nil // its slots are the spec in force's, and its replicas'
	}
	keep := 0
	switch p.catchUp {
	case policy.CatchUpLatest:
		keep = 1
	case policy.CatchUpAll:
		keep = p.catchUpLimit
	}
	from := now.Add(-p.deadline)
	first := p.owedFrom(g, now)
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
		if reason := p.excluded(s); reason != "" {
			// Never to run: it spends none of the policy's slots.
			skips = append(skips, p.calendarSkip(s, reason))
			continue
		}
		due := s.Add(p.jitter)
		if caught < keep || now.Sub(due) < time.Second {
			// The newest due slots as the policy says, and always one due
			// this very second.
			caught++
			l.h.push(&entry{at: now, p: p, slot: s, kind: retry})
			continue
		}
		// Left to the replicas that are up; if none claims it before its
		// window closes, history records why it did not run. Slots the
		// store's record of the job does not owe are not worth a record,
		// and every older slot is one of them.
		if first.IsZero() || s.Before(first) {
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
	n := 0
	for s := first; !s.IsZero() && s.Before(from); s = p.sched.Next(s) {
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

// owedFrom returns the oldest slot of p whose lack of a marker means that
// no replica ran it, as g, the job's generation, tells: the one after the
// job's newest marker; for a job with none, the first of its generation
// (before it the job was not enrolled yet, or the store lost what it knew)
// but not older than the job's history less clockMargin (an older slot may
// have run and had its marker pruned, by the store's clock, which may run
// ahead of this one). So a job enrolled but never run owes the slots since
// its enrolment, and one the store has just begun to record owes none from
// before. Zero when the store knows neither.
//
// The floor is today's history: a marker kept under a shorter one, since
// raised, may have been pruned, and its slot is owed (recorded missed once)
// though it ran. The store does not record how long it kept a job's
// markers, so that cannot be told apart here (nor by a backfill's plan).
func (p *plan) owedFrom(g slotstore.Generation, now time.Time) time.Time {
	if !g.Newest.IsZero() {
		return p.sched.Next(g.Newest)
	}
	if g.Born.IsZero() {
		return time.Time{}
	}
	floor := now.Add(-p.history + clockMargin)
	if g.From().After(floor) {
		floor = g.From()
	}
	// The first slot at or after floor: a slot of the generation's very
	// instant is covered (slotstore.Generation.Covers).
	return p.sched.Next(floor.Add(-time.Nanosecond))
}

// missedSkip is the request that records slot of p skipped with reason
// because its starting window closed: the store records it only once its
// own clock has passed the window too (guarantee 7), so a replica whose
// clock runs fast cannot take the slot from the others.
func (p *plan) missedSkip(slot time.Time, reason string) slotstore.SkipRequest {
	if cal := p.excluded(slot); cal != "" {
		// Never to run, missed or not: a calendar of the job skips it.
		return p.calendarSkip(slot, cal)
	}
	return slotstore.SkipRequest{Job: p.name, Slot: slot, Reason: reason, Retain: p.history, NotBefore: slot.Add(p.deadline),
		Spec: p.spec.Fingerprint}
}
