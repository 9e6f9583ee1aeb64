// Result handling: what the loop does with the store's answer to each claim
// — start a won slot, watch a held one, wait for a retry or for the store's
// clock, or log why the slot will not run here.

package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// claimMemo is what the loop remembers of earlier claims to act on a
// result; only the loop goroutine touches it.
type claimMemo struct {
	// unknown holds the slots whose last claim's outcome is unknown: if
	// such a slot turns out held by this replica, the claim won and its
	// reply was lost, and the run is adopted.
	unknown map[slotKey]bool
	// dataLoss holds the jobs whose slots the store skipped for data loss
	// since the last one it did not: the loss is logged once.
	dataLoss map[string]bool
	// late holds the jobs whose slots the store recorded missed: late for
	// this replica's claims since the last one it did not: this replica's
	// clock runs behind the store's, logged once.
	late map[string]bool
	// newJobs holds the jobs whose generation this replica's start-up
	// began, with when it began: their slots from before are recorded
	// skipped as never theirs (beforeRecord), not claimed as a loss.
	newJobs map[string]time.Time
	// newFrom is the latest instant from which a generation of newJobs
	// covers slots (slotstore.Generation.From): slots from then on are
	// every job's, and beforeRecord need not look a job up.
	newFrom time.Time
}

func newClaimMemo() claimMemo {
	return claimMemo{unknown: make(map[slotKey]bool), dataLoss: make(map[string]bool), late: make(map[string]bool), newJobs: make(map[string]time.Time)}
}

// result acts on the store's answer r to the claim of e, part of a, on
// the loop goroutine.
func (l *loop) result(e *entry, r slotstore.ClaimResult, a claimAnswer) {
	sent := a.sent
	l.s.metrics.claim(e.p, r.Status).Inc()
	k := slotKey{e.p.name, e.slot.Unix()}
	wasUnknown := l.memo.unknown[k]
	delete(l.memo.unknown, k)
	if r.Status == slotstore.Held && wasUnknown && l.mineByName(r.Marker) &&
		l.adopt(e.p, r.Marker, beginAt(e, maxTime(r.Marker.LeaseEnd.Add(-r.Remaining), a.answered), a.arrived)) {
		return
	}
	if e.kind == queued && l.waiting[e.p.name] == e {
		delete(l.waiting, e.p.name) // waits no more, unless answered Queued again
	}
	log := l.slotLog(e)
	switch r.Status {
	case slotstore.Won:
		l.won(e, r, sent, beginAt(e, maxTime(r.Marker.ClaimedAt, a.answered), a.arrived))
	case slotstore.Held:
		// Lost at DEBUG: the holder logs the decision that matters.
		log.at(slog.LevelDebug, "slot lost", "holder", r.Marker.Holder, "fence", r.Marker.Fence, "attempt", r.Marker.Attempt,
			"remaining", r.Remaining.Round(time.Millisecond))
		// Claim again exactly when the holder's lease ends, by the store's
		// reckoning, so a dead holder's slot is taken over at once; and at
		// least every renewal interval, so a slot released by a holder that
		// shut down is taken over within one interval.
		wait := max(min(r.Remaining-time.Since(sent), e.p.lease/3), time.Millisecond)
		l.push(&entry{p: e.p, slot: e.slot, kind: watch}, l.s.now().Add(wait))
	case slotstore.Finished:
		log.at(slog.LevelDebug, "slot lost", "holder", r.Marker.Holder, "fence", r.Marker.Fence, "state", r.Marker.State,
			"outcome", r.Marker.Outcome)
	case slotstore.Waiting:
		log.at(log.first, "slot waiting for its retry", "due_in", r.Remaining.Round(time.Millisecond))
		l.push(&entry{p: e.p, slot: e.slot, kind: watch, until: e.p.retryUntil(e.slot)},
			l.s.now().Add(max(r.Remaining-time.Since(sent), time.Millisecond)))
	case slotstore.Skipped:
		l.skipped(e, r.Marker, log)
	case slotstore.NotYet:
		l.notYet(e, r.Remaining, sent, log)
	case slotstore.Queued:
		l.queue(e, r.Remaining, sent, log)
	case slotstore.Absent:
		if l.lostHere(e) {
			l.markerLost(e)
			return
		}
		log.at(slog.LevelDebug, "slot gone", "reason", "its marker no longer exists")
	case slotstore.Superseded:
		log.at(slog.LevelDebug, "slot not claimed", "reason", "another spec of the job is in force")
		l.s.superseded(e.p)
	case slotstore.Abandoned:
		log.at(slog.LevelWarn, "slot abandoned", "holder", r.Marker.Holder, "attempt", r.Marker.Attempt,
			"on_crash", e.p.onCrash)
	}
}

// slotDecisions writes the lines of one slot's decisions.
type slotDecisions struct {
	log *slog.Logger
	e   *entry
	// first is the level of a decision worth a line when the slot is new
	// to the loop (info), and not on a re-check of a watched slot (debug).
	first slog.Level
}

func (l *loop) slotLog(e *entry) slotDecisions {
	first := slog.LevelInfo
	if e.kind == watch || e.kind == queued {
		first = slog.LevelDebug
	}
	return slotDecisions{log: l.s.log, e: e, first: first}
}

// at writes msg at level with the slot's attributes and more, which are
// built only for a line that is written: most decisions are not worth one
// at the levels replicas run at.
func (d slotDecisions) at(level slog.Level, msg string, more ...any) {
	if d.log.Enabled(context.Background(), level) {
		attrs := append([]any{"job", d.e.p.name, "slot", d.e.slot.Format(time.RFC3339)}, more...)
		d.log.Log(context.Background(), level, msg, attrs...)
	}
}

// won starts the run of a won claim, when b says, after stopping the runs
// of this replica that the claim replaced (overlap: replace).
func (l *loop) won(e *entry, r slotstore.ClaimResult, sent time.Time, b begin) {
	delete(l.memo.dataLoss, e.p.name)
	delete(l.memo.late, e.p.name)
	delete(l.memo.newJobs, e.p.name)
	for _, ref := range r.Replaced {
		l.s.log.Info("run replaced", "job", ref.Job, "slot", ref.Slot.UTC().Format(time.RFC3339), "fence", ref.Fence,
			"by", e.slot.Format(time.RFC3339))
		if cancel, ok := l.runs.running(slotKey{ref.Job, ref.Slot.Unix()}); ok {
			cancel(ErrReplaced) // ours: stop it now, not at its next renewal
		}
	}
	l.start(e.p, r.Claim, originOf(r.Marker), sent, b)
}

// beginAt is when the run of e's slot starts, given the latest the store's
// clock is known to have read before its answer to the claim left it: the
// answer's time (claimAnswer.answered), or the decision's when it is
// later or the store tells none. At the slot's instant (its jitter's
// included) by the store's clock, for a claim made ahead of it, or a
// released one claimed again before it, and at once otherwise. It counts
// from arrived, when the answer came, after the store answered, so the run
// never starts before the slot's instant by the store's clock, however
// this replica's clock runs: at most the answer's way back later, whatever
// the rest of a long batch took. The runs of one answer due at one instant
// share it, and so their gate.
func beginAt(e *entry, storeNow, arrived time.Time) begin {
	if d := e.slot.Add(e.p.jitter).Sub(storeNow); d > 0 {
		return begin{at: arrived.Add(d)}
	}
	return begin{}
}

// skipped logs a slot the store has recorded skipped, m, and counts it
// missed when this replica's claim is what recorded it (a loss of the
// store's data, an overlap, a window closed by the store's clock); one
// recorded by another replica is logged at DEBUG, as that replica logged
// it. A loss, and a closed window, are logged as a warning once per job
// until a claim of the job wins again. (The slots of a job the store
// has just begun to record are not claimed: beforeRecord.)
func (l *loop) skipped(e *entry, m slotstore.Marker, log slotDecisions) {
	mine := m.Holder == l.s.replica
	if m.Reason == slotstore.ReasonDataLoss && mine {
		l.s.metrics.missed.WithLabelValues(e.p.metricJob(), "data loss").Inc()
		if !l.memo.dataLoss[e.p.name] {
			l.memo.dataLoss[e.p.name] = true
			log.at(slog.LevelWarn, "slot skipped: older than the store's record of the job",
				"reason", m.Reason, "why", "the store lost its data, or has just begun to record the job")
			return
		}
	}
	if m.Reason == slotstore.ReasonLate && mine {
		// Its window had closed by the store's clock when the claim came.
		l.s.metrics.missed.WithLabelValues(e.p.metricJob(), missedReason(m.Reason)).Inc()
		if !l.memo.late[e.p.name] {
			l.memo.late[e.p.name] = true
			log.at(slog.LevelWarn, "slot missed: its window had closed by the store's clock", "reason", m.Reason,
				"why", "this replica's clock runs behind the store's by more than the starting deadline, or its claim took that long")
			return
		}
	}
	level := log.first
	if !mine {
		level = slog.LevelDebug // the replica whose skip recorded it logs it
	}
	log.at(level, "slot skipped", "reason", m.Reason, "by", m.Holder)
	if mine && m.Reason == slotstore.ReasonOverlap {
		l.s.metrics.missed.WithLabelValues(e.p.metricJob(), slotstore.ReasonOverlap).Inc()
	}
}

// notYet claims e again when the store's clock reaches its slot, remaining
// after the claim was sent: this replica's clock runs ahead of the store's,
// and the store hands out a slot only once its own clock says it is due.
func (l *loop) notYet(e *entry, remaining time.Duration, sent time.Time, log slotDecisions) {
	log.at(slog.LevelDebug, "slot not due yet by the store's clock", "remaining", remaining.Round(time.Millisecond))
	if e.kind == fire {
		e.kind = retry // the next slot is scheduled already
	}
	// Its window opens when the store's clock reaches the slot, and closes
	// starting_deadline later, whatever this replica's clock says then: one
	// that runs ahead by more than the deadline still takes its share of
	// the slots. Measured from when the claim was sent, it closes no later
	// than it does by the store's clock.
	if e.closes.IsZero() {
		e.closes = sent.Add(remaining + e.slot.Sub(e.notBefore()) + e.p.deadline)
	}
	l.push(e, l.s.now().Add(max(remaining-time.Since(sent), time.Millisecond)))
}

// mineByName reports whether m's claim was made by this process: this
// replica's name and this process's incarnation. Another process started
// with the same name (a copied configuration) has another incarnation.
func (l *loop) mineByName(m slotstore.Marker) bool {
	return m.Holder == l.s.replica && m.Incarnation == l.s.incarnation
}

// adopt takes up a claim this replica made whose reply was lost: it renews
// the lease under the marker's fence (so the store's lease covers the trust
// window that starts now) and runs the slot as if the claim had answered,
// when b says (at the slot's instant, for a claim made ahead of it).
// The marker's incarnation says the claim is this process's own, even when
// another live process shares the replica name.
func (l *loop) adopt(p *plan, m slotstore.Marker, b begin) bool {
	if l.runs.ranOrRuns(slotKey{p.name, m.Slot.Unix()}, m.Fence) {
		return false
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(l.runCtx, claimTimeout(nil))
	err := l.st.Renew(ctx, slotstore.RenewParams{Ref: m.Ref(), Lease: p.lease})
	cancel()
	if err != nil {
		l.s.log.Warn("could not adopt a claim whose reply was lost", "job", p.name, "slot", m.Slot.Format(time.RFC3339),
			"fence", m.Fence, "err", err)
		return false
	}
	l.s.log.Info("claim adopted", "job", p.name, "slot", m.Slot.Format(time.RFC3339), "fence", m.Fence, "reason", "its reply was lost")
	l.start(p, slotstore.Claim{Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: ""}, originOf(m), sent, b)
	return true
}
