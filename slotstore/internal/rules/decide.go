package rules

import (
	"slices"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// Reasons the store records in slotstore.Marker.Reason that callers need
// not compare (slotstore exports the others: ReasonOverlap, ReasonDataLoss).
const (
	// ReasonOnCrashSkip: abandoned because its holder's lease expired and
	// the claim said policy.OnCrashSkip.
	ReasonOnCrashSkip = "on_crash skip"
	// ReasonMaxAttempts: abandoned because its holder's lease expired and
	// no attempts were left.
	ReasonMaxAttempts = "max attempts"
	// ReasonReplacedBy starts the reason of a replaced marker; the RFC 3339
	// slot of the winning claim follows.
	ReasonReplacedBy = "replaced by "
)

// Decision is what a claim does to a slot, decided from its current marker.
type Decision int

const (
	// DecideWin claims the slot: creates the marker, takes it over, claims
	// its retry, or backfills it (a Backfill claim of a slot recorded
	// skipped, which Apply wins as a first claim). Needs a new fence.
	DecideWin Decision = iota + 1
	// DecideLose leaves the marker alone: it is held, waiting for its
	// retry, final, or absent for a takeover-only claim; or a Backfill
	// claim with policy.OverlapForbid came while another slot of the job
	// runs.
	DecideLose
	// DecideAbandon marks the expired running slot abandoned.
	DecideAbandon
	// DecideSkip records the slot, which has no marker, skipped for
	// overlap (Apply gives it Reason slotstore.ReasonOverlap). No fence.
	DecideSkip
	// DecideReplace claims the slot, which has no marker, as DecideWin
	// does, and supersedes the job's other running slots (Supersede).
	// Needs a new fence.
	DecideReplace
	// DecideDataLoss records the slot, which has no marker and is older
	// than its job's generation, skipped with Reason
	// slotstore.ReasonDataLoss. No fence.
	DecideDataLoss
	// DecideAbandonDataLoss marks the slot, whose marker was claimed
	// before its job's generation began and is not held by a live lease,
	// abandoned with Reason slotstore.ReasonDataLoss: the store may have
	// lost a newer state of it.
	DecideAbandonDataLoss
	// DecideNotYet leaves the slot, which has no marker or one a Backfill
	// claim may win, alone: the store's clock has not reached the claim's
	// NotBefore. Apply answers NotYet.
	DecideNotYet
	// DecideQueue leaves the slot, which has no marker, alone: its claim
	// has policy.OverlapQueue and another slot of the job runs, under a
	// live lease or under an expired one a takeover may still win
	// (QueueWait). Apply answers Queued.
	DecideQueue
	// DecideLate records the slot, which has no marker, skipped with Reason
	// slotstore.ReasonLate: the store's clock has passed the claim's
	// NotAfter, the end of the slot's starting window. No fence.
	DecideLate
)

// Changes reports whether the decision writes the slot's marker.
func (d Decision) Changes() bool { return d != DecideLose && d != DecideNotYet && d != DecideQueue }

// Decide applies the claim rules to the slot's current marker (nil when the
// slot has none) for r, a normalized request (NormalizeClaim), at the
// store's time now; born is when the job's generation began
// (slotstore.Generation.Born): a slot the generation does not cover gets no
// first marker but a skipped one, and a marker claimed before it is
// abandoned rather than taken over once no live lease holds it. running
// holds the markers of the job's running slots as the store has them at
// that moment, including changes made earlier in the same batch; Decide
// reads it only when ReadsRunning(m, r), so callers may pass nil otherwise,
// and it ignores entries of other jobs, of r's own slot and in other
// states.
//
// A Backfill claim decides as any other claim but of a slot whose marker
// is skipped for a reason other than slotstore.ReasonDataLoss: before
// r.NotBefore it is DecideNotYet, as for a first claim; then, if the skip
// was recorded before born (the marker came back from before a loss, and
// the slot may have been backfilled and run since) or the slot is older
// than born (it may have run before the loss), it is DecideLose, as it is
// with policy.OverlapForbid while another slot of the job runs under a
// live lease; else DecideWin. A Backfill claim made once now has reached
// r.Slot+r.Retain decides as its Effective request, a takeover-only claim.
func Decide(m *slotstore.Marker, r slotstore.ClaimRequest, now, born time.Time, running []slotstore.Marker) Decision {
	r = Effective(r, now)
	if m == nil {
		return decideFirst(r, now, born, running)
	}
	// A marker claimed before the job's generation began came back from
	// before a loss (a restored backup): its slot may have finished since,
	// so once no live lease holds it, it is abandoned, never taken over.
	stale := !r.Term && m.ClaimedAt.Before(born)
	switch m.State {
	case slotstore.StateReleased:
		if stale {
			return DecideAbandonDataLoss
		}
		return DecideWin
	case slotstore.StateRetrying:
		if now.Before(m.LeaseEnd) {
			return DecideLose
		}
		if stale {
			return DecideAbandonDataLoss
		}
		return DecideWin
	case slotstore.StateRunning:
		if now.Before(m.LeaseEnd) {
			return DecideLose
		}
		if stale {
			return DecideAbandonDataLoss
		}
		if r.OnCrash == policy.OnCrashSkip || (r.MaxAttempts > 0 && m.Attempt >= r.MaxAttempts) {
			return DecideAbandon
		}
		return DecideWin
	case slotstore.StateSkipped:
		// A slot skipped for data loss may have run before the loss: it
		// is never backfilled.
		if !r.Backfill || m.Reason == slotstore.ReasonDataLoss {
			return DecideLose
		}
		if now.Before(r.NotBefore) {
			return DecideNotYet
		}
		// A skip recorded before the generation began came back from
		// before a loss (a restored backup): the slot may have been
		// backfilled, and run, since. A slot older than the generation may
		// have run before the loss, whenever its skip was recorded.
		if m.ClaimedAt.Before(born) || !(slotstore.Generation{Born: born}).Covers(r.Slot) {
			return DecideLose
		}
		if r.Overlap == policy.OverlapForbid && liveOther(running, r.Job, r.Slot, now) {
			return DecideLose
		}
		return DecideWin
	}
	return DecideLose
}

// decideFirst is Decide for a slot with no marker.
func decideFirst(r slotstore.ClaimRequest, now, born time.Time, running []slotstore.Marker) Decision {
	if r.TakeoverOnly {
		return DecideLose
	}
	if !(slotstore.Generation{Born: born}).Covers(r.Slot) && !r.Term {
		return DecideDataLoss
	}
	// A replica whose clock runs ahead tries early; it gets the slot
	// when the store's clock reaches r.NotBefore.
	if now.Before(r.NotBefore) {
		return DecideNotYet
	}
	// One whose clock runs behind comes after the slot's window by the
	// store's clock: it records the slot missed rather than run it late.
	if !r.NotAfter.IsZero() && now.After(r.NotAfter) {
		return DecideLate
	}
	switch r.Overlap {
	case policy.OverlapForbid:
		if liveOther(running, r.Job, r.Slot, now) {
			return DecideSkip
		}
	case policy.OverlapReplace:
		if len(others(running, r.Job, r.Slot)) > 0 {
			return DecideReplace
		}
	case policy.OverlapQueue:
		if _, ok := queueBlocked(running, r, now, born); ok {
			return DecideQueue
		}
	}
	return DecideWin
}

// Answered sets Answered of every result of a claim's batch to at, the
// store's clock read after the batch's last decision and before its reply
// (slotstore.ClaimResult.Answered), and returns out.
func Answered(out []slotstore.ClaimResult, at time.Time) []slotstore.ClaimResult {
	for i := range out {
		out[i].Answered = at
	}
	return out
}

// Effective returns r, a normalized request, as the store decides it at its
// time now. A Backfill claim made once now has reached r.Slot+r.Retain is a
// TakeoverOnly claim without Backfill: the slot's marker is kept only until
// then, so a slot with none may have run and had its marker pruned, and a
// marker the backfill made would itself be due for pruning at once. It
// creates no marker, and a slot that has one is claimed as an ordinary
// claim claims it (a skipped one loses). Decide applies it itself; a
// backend calls it first to ask ReadsRunning of the request it decides.
func Effective(r slotstore.ClaimRequest, now time.Time) slotstore.ClaimRequest {
	retain := r.Retain
	if retain <= 0 {
		retain = DefaultRetain
	}
	if r.Backfill && !now.Before(r.Slot.Add(retain)) {
		r.Backfill, r.TakeoverOnly = false, true
	}
	return r
}

// liveOther reports whether another slot of job than slot runs under a
// live lease at now, among running.
func liveOther(running []slotstore.Marker, job string, slot, now time.Time) bool {
	for _, o := range others(running, job, slot) {
		if now.Before(o.LeaseEnd) {
			return true
		}
	}
	return false
}

// others returns the running markers of job's slots other than slot.
func others(running []slotstore.Marker, job string, slot time.Time) []slotstore.Marker {
	var out []slotstore.Marker
	for _, o := range running {
		if o.State == slotstore.StateRunning && o.Job == job && !o.Slot.Equal(slot) {
			out = append(out, o)
		}
	}
	return out
}

// Apply changes m (a copy of the current marker, or a new zero marker) as the
// decision says and returns the result the claim reports. replica and
// incarnation are the claimant's (slotstore.ClaimParams). fence is used only
// for DecideWin and DecideReplace and must come from the job's fence source.
// For DecideReplace the caller also stores what Supersede returns and lists
// it in ClaimResult.Replaced; for DecideQueue it sets ClaimResult.Remaining
// to QueueWait(running, r, now, born). A win of a skipped marker (a backfill) is a
// first claim's: attempt 1, no previous holder, not manual, backfilled.
func Apply(d Decision, m slotstore.Marker, r slotstore.ClaimRequest, replica, incarnation string, fence int64, now time.Time) (slotstore.Marker, slotstore.ClaimResult) {
	switch d {
	case DecideWin, DecideReplace:
		prev, manual, backfill, attempt := "", r.Manual, r.Backfill, 1
		switch m.State {
		case "":
		case slotstore.StateSkipped:
			manual = false
		default:
			prev, manual, backfill, attempt = m.Holder, m.Manual, m.Backfill, m.Attempt+1
		}
		retry := m.State == slotstore.StateRetrying
		m = slotstore.Marker{
			Job: r.Job, Slot: r.Slot, State: slotstore.StateRunning, Holder: replica, Fence: fence,
			Attempt: attempt, ClaimedAt: now, LeaseEnd: now.Add(r.Lease),
			KeepUntil: r.Slot.Add(r.Retain), Manual: manual, Backfill: backfill, Incarnation: incarnation,
		}
		return m, slotstore.ClaimResult{Status: slotstore.Won, Marker: m, Claim: slotstore.Claim{
			Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: prev, Retry: retry,
		}}
	case DecideAbandon:
		m.State = slotstore.StateAbandoned
		m.FinishedAt = now
		m.Reason = ReasonMaxAttempts
		if r.OnCrash == policy.OnCrashSkip {
			m.Reason = ReasonOnCrashSkip
		}
		return m, slotstore.ClaimResult{Status: slotstore.Abandoned, Marker: m}
	case DecideAbandonDataLoss:
		m.State = slotstore.StateAbandoned
		m.FinishedAt = now
		m.Reason = slotstore.ReasonDataLoss
		return m, slotstore.ClaimResult{Status: slotstore.Abandoned, Marker: m}
	case DecideSkip:
		m = skipped(r.Job, r.Slot, r.Slot.Add(r.Retain), slotstore.ReasonOverlap, replica, r.Manual, now)
		return m, slotstore.ClaimResult{Status: slotstore.Skipped, Marker: m}
	case DecideDataLoss, DecideLate:
		reason := slotstore.ReasonDataLoss
		if d == DecideLate {
			reason = slotstore.ReasonLate
		}
		m = skipped(r.Job, r.Slot, r.Slot.Add(r.Retain), reason, replica, r.Manual, now)
		return m, slotstore.ClaimResult{Status: slotstore.Skipped, Marker: m}
	case DecideNotYet:
		return m, slotstore.ClaimResult{Status: slotstore.NotYet, Remaining: r.NotBefore.Sub(now)}
	case DecideQueue:
		return m, slotstore.ClaimResult{Status: slotstore.Queued, Marker: slotstore.Marker{Job: r.Job, Slot: r.Slot}}
	}
	return m, answer(m, now)
}

// answer is what a claim that changes nothing reports of m, the slot's
// marker (a zero marker for none).
func answer(m slotstore.Marker, now time.Time) slotstore.ClaimResult {
	res := slotstore.ClaimResult{Marker: m}
	switch m.State {
	case "":
		res.Status = slotstore.Absent
	case slotstore.StateRunning:
		res.Status = slotstore.Held
		res.Remaining = max(m.LeaseEnd.Sub(now), 0)
	case slotstore.StateReleased:
		res.Status = slotstore.Held
	case slotstore.StateRetrying:
		res.Status = slotstore.Waiting
		res.Remaining = max(m.LeaseEnd.Sub(now), 0)
	case slotstore.StateAbandoned:
		res.Status = slotstore.Abandoned
	case slotstore.StateSkipped:
		res.Status = slotstore.Skipped
	default:
		res.Status = slotstore.Finished
	}
	return res
}

// QueueWait is the Remaining of a claim decided DecideQueue at now, with
// born and running as Decide had them: the least time left on the leases
// of the job's other running slots that hold the claim back
// (queueBlocked), 0 when only expired ones do.
func QueueWait(running []slotstore.Marker, r slotstore.ClaimRequest, now, born time.Time) time.Duration {
	wait, _ := queueBlocked(running, r, now, born)
	return wait
}

// queueBlocked reports whether a first claim of r, a request with
// policy.OverlapQueue, waits at now for another slot of its job among
// running, and for how long at least: the least time left on the leases
// of those that hold it back, 0 for an expired one. A running slot holds it
// back while its lease is live, and once its lease has expired while a
// takeover may still win it (Decide): r's OnCrash is retry, attempts are
// left (r.MaxAttempts is 0 or above the marker's Attempt), and the marker
// was claimed at or after born, or r is a Term claim. A marker claimed
// before born is abandoned for data loss, never taken over, and one whose
// holder crashed with no takeover left is abandoned: neither runs again.
// The request carries the job's policy, as its slots' claims do.
func queueBlocked(running []slotstore.Marker, r slotstore.ClaimRequest, now, born time.Time) (time.Duration, bool) {
	wait, ok := time.Duration(0), false
	for _, o := range others(running, r.Job, r.Slot) {
		live := now.Before(o.LeaseEnd)
		retried := r.OnCrash != policy.OnCrashSkip && !(r.MaxAttempts > 0 && o.Attempt >= r.MaxAttempts) &&
			(r.Term || !o.ClaimedAt.Before(born))
		if !live && !retried {
			continue
		}
		left := max(o.LeaseEnd.Sub(now), 0)
		if !ok || left < wait {
			wait, ok = left, true
		}
	}
	return wait, ok
}

// Supersede returns the markers of running, the job's running markers as
// Decide saw them, that a claim decided DecideReplace and leaving won
// replaces, oldest slot first, as it leaves them: state replaced, the reason
// naming won's slot, lease ended and finished now, fence kept.
func Supersede(running []slotstore.Marker, won slotstore.Marker, now time.Time) []slotstore.Marker {
	out := others(running, won.Job, won.Slot)
	slices.SortFunc(out, func(a, b slotstore.Marker) int { return a.Slot.Compare(b.Slot) })
	for i := range out {
		out[i].State = slotstore.StateReplaced
		out[i].Reason = ReasonReplacedBy + won.Slot.UTC().Format(time.RFC3339)
		out[i].LeaseEnd, out[i].FinishedAt = now, now
	}
	return out
}

// ApplySkip is Skip's decision table for r, a normalized request
// (NormalizeSkip): a slot with no marker (m nil) is recorded skipped with
// r's reason, and changed reports true, unless the store's time now is
// before r.NotBefore, which answers NotYet; a slot with a marker is left
// alone, and the result is what a losing claim reports.
func ApplySkip(m *slotstore.Marker, r slotstore.SkipRequest, replica string, now time.Time) (slotstore.Marker, slotstore.ClaimResult, bool) {
	if m == nil {
		if now.Before(r.NotBefore) {
			return slotstore.Marker{}, slotstore.ClaimResult{Status: slotstore.NotYet, Remaining: r.NotBefore.Sub(now)}, false
		}
		s := skipped(r.Job, r.Slot, r.Slot.Add(r.Retain), r.Reason, replica, false, now)
		return s, slotstore.ClaimResult{Status: slotstore.Skipped, Marker: s}, true
	}
	s, res := Apply(DecideLose, *m, slotstore.ClaimRequest{Job: r.Job, Slot: r.Slot}, replica, "", 0, now)
	return s, res, false
}

// skipped is the marker of a slot recorded skipped at now.
func skipped(job string, slot, keep time.Time, reason, replica string, manual bool, now time.Time) slotstore.Marker {
	return slotstore.Marker{
		Job: job, Slot: slot, State: slotstore.StateSkipped, Holder: replica, ClaimedAt: now, LeaseEnd: now,
		KeepUntil: keep, FinishedAt: now, Reason: reason, Manual: manual,
	}
}
