// The queued overlap (policy.OverlapQueue): a slot that comes due while
// another slot of its job runs waits, one at most per job, and is claimed
// again the moment a run of the job ends here, or when the first running
// lease may end, and at least every lease/3 until its starting window
// closes. The store decides, atomically with every other claim of the job,
// whether a run still goes on (slotstore.Queued); the loop keeps only which
// slot waits.

package engine

import (
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// queue keeps e waiting after the store answered its claim Queued: the
// job's other runs had remaining left on their leases when it was sent.
func (l *loop) queue(e *entry, remaining time.Duration, sent time.Time, log slotDecisions) {
	if old := l.waiting[e.p.name]; old != nil && old != e {
		// Two slots of the job wait (a claim of the older was out when the
		// newer came due): the newer waits, the older is recorded skipped
		// once its window closes, unless a claim wins it first.
		older := old
		if e.slot.Before(old.slot) {
			older = e
		}
		older.dropped = true
		l.push(&entry{p: older.p, slot: older.slot, kind: lapse, reason: slotstore.ReasonOverlap},
			older.slot.Add(older.p.deadline).Add(time.Millisecond))
		if older == e {
			return
		}
	}
	log.at(log.first, "slot queued: waiting for the job's running slot to end", "remaining", remaining.Round(time.Millisecond))
	e.kind = queued
	l.waiting[e.p.name] = e
	now := l.s.now()
	l.push(e, now.Add(queueWait(e, remaining, sent, now)))
}

// queueWait is how long e, answered Queued with remaining when its claim
// was sent at sent, waits from now (the scheduler's clock) before its next
// claim: until the first running
// lease may end, at most lease/3 (the run may end sooner on another
// replica), and lease/3 when the store named no lease that is still live
// (a crashed holder's slot, which a takeover may still win). It never
// outlasts the slot's starting window, by the store's clock when the
// store has said where that stands (entry.closes), by this replica's
// otherwise; and it is never under a millisecond, however far this
// replica's clock runs ahead: a claim is answered before the next is sent.
func queueWait(e *entry, remaining time.Duration, sent, now time.Time) time.Duration {
	wait := e.p.lease / 3
	if left := remaining - time.Since(sent); remaining > 0 && left < wait {
		wait = left
	}
	var closing time.Duration
	if !e.closes.IsZero() {
		closing = time.Until(e.closes)
	} else {
		closing = e.slot.Add(e.p.deadline).Sub(now)
	}
	return max(min(wait, closing+time.Millisecond), time.Millisecond)
}

// replaceWaiting records the slot of e's job that still waits, if any,
// skipped for overlap now that e, its next slot, has come due: one slot
// waits at most. It returns missed with the skip appended; the store
// records it only if no claim has won the slot meanwhile, and not before
// e's slot by its own clock.
func (l *loop) replaceWaiting(e *entry, missed []slotstore.SkipRequest) []slotstore.SkipRequest {
	old := l.waiting[e.p.name]
	if old != nil && old.p != e.p {
		// Its plan was retired by a reload: its claims are refused under
		// the new spec, and it is no slot of this one to record.
		old.dropped = true
		delete(l.waiting, e.p.name)
		return missed
	}
	if old == nil || !old.slot.Before(e.slot) || e.p.excluded(e.slot) != "" {
		return missed // a slot a calendar skips replaces nothing: it never waits
	}
	old.dropped = true
	delete(l.waiting, e.p.name)
	l.s.log.Debug("waiting slot replaced by the job's next slot", "job", e.p.name, "slot", old.slot.Format(time.RFC3339),
		"by", e.slot.Format(time.RFC3339))
	return append(missed, slotstore.SkipRequest{Job: e.p.name, Slot: old.slot, Reason: slotstore.ReasonOverlap,
		Retain: e.p.history, NotBefore: e.slot, Spec: e.p.spec.Fingerprint})
}

// runEnded claims at once the slot of p's job that waits, if any: a run of
// the job has just ended here.
func (l *loop) runEnded(p *plan) {
	old := l.waiting[p.name]
	if old == nil || old.p != p {
		return
	}
	old.dropped = true
	e := &entry{p: p, slot: old.slot, kind: queued, closes: old.closes}
	l.waiting[p.name] = e
	l.s.log.Log(l.runCtx, slog.LevelDebug, "run ended; claiming the slot that waits", "job", p.name,
		"slot", e.slot.Format(time.RFC3339))
	l.push(e, l.s.now())
}

// triggerOverlap is the overlap a manual trigger claims with: a trigger
// never waits, so with overlap queue it is refused while a run goes on,
// as with forbid.
func triggerOverlap(o policy.Overlap) policy.Overlap {
	if o == policy.OverlapQueue {
		return policy.OverlapForbid
	}
	return o
}
