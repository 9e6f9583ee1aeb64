package slotstore

import (
	"slices"
	"time"
)

// DefaultRetain is how long a marker is kept when ClaimRequest.Retain is zero.
const DefaultRetain = 7 * 24 * time.Hour

// Normalize validates r and returns it with Slot truncated to the second in
// UTC, OnCrash defaulted and Retain defaulted. Backends call it for every
// request before touching state, so a bad request changes nothing.
func (r ClaimRequest) Normalize() (ClaimRequest, error) {
	if r.Job == "" {
		return r, invalid("claim: empty job")
	}
	// Judged after truncation: a slot within a second after the zero Time
	// truncates to it, and a claim of it would hand out a Ref that Renew,
	// Finish and Release refuse (Ref.Validate).
	if r.Slot.UTC().Truncate(time.Second).IsZero() {
		return r, invalid("claim %s: zero slot", r.Job)
	}
	if r.Lease <= 0 {
		return r, invalid("claim %s: lease %v is not positive", r.Job, r.Lease)
	}
	switch r.OnCrash {
	case "":
		r.OnCrash = OnCrashRetry
	case OnCrashRetry, OnCrashSkip:
	default:
		return r, invalid("claim %s: on_crash %q", r.Job, r.OnCrash)
	}
	if r.MaxAttempts < 0 {
		return r, invalid("claim %s: max attempts %d", r.Job, r.MaxAttempts)
	}
	switch r.Overlap {
	case "":
		r.Overlap = OverlapAllow
	case OverlapAllow, OverlapForbid, OverlapReplace:
	default:
		return r, invalid("claim %s: overlap %q", r.Job, r.Overlap)
	}
	if r.Retain <= 0 {
		r.Retain = DefaultRetain
	}
	r.Slot = r.Slot.UTC().Truncate(time.Second)
	if !r.NotBefore.IsZero() {
		r.NotBefore = r.NotBefore.UTC()
	}
	return r, nil
}

// NormalizeJobs validates the jobs of an Enroll: none may be empty.
func (p EnrollParams) NormalizeJobs() ([]string, error) {
	for _, j := range p.Jobs {
		if j == "" {
			return nil, invalid("enroll: empty job")
		}
	}
	return p.Jobs, nil
}

// ChecksOverlap reports whether Decide needs the job's running markers for
// r: it does only for a claim with OverlapForbid or OverlapReplace that may
// create the slot's first marker.
func (r ClaimRequest) ChecksOverlap() bool {
	return !r.TakeoverOnly && (r.Overlap == OverlapForbid || r.Overlap == OverlapReplace)
}

// NormalizeAll normalizes every request of a batch into a new slice, or
// returns the first request's error: a batch with a bad request changes
// nothing.
func NormalizeAll(reqs []ClaimRequest) ([]ClaimRequest, error) {
	out := make([]ClaimRequest, len(reqs))
	for i, r := range reqs {
		n, err := r.Normalize()
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// Normalize validates r and returns it with Slot truncated to the second in
// UTC and Retain defaulted.
func (r SkipRequest) Normalize() (SkipRequest, error) {
	if r.Job == "" {
		return r, invalid("skip: empty job")
	}
	if r.Slot.UTC().Truncate(time.Second).IsZero() { // as ClaimRequest.Normalize
		return r, invalid("skip %s: zero slot", r.Job)
	}
	if r.Reason == "" {
		return r, invalid("skip %s: empty reason", r.Job)
	}
	if r.Retain <= 0 {
		r.Retain = DefaultRetain
	}
	r.Slot = r.Slot.UTC().Truncate(time.Second)
	if !r.NotBefore.IsZero() {
		r.NotBefore = r.NotBefore.UTC()
	}
	return r, nil
}

// NormalizeSkips normalizes every request of a Skip batch into a new slice,
// or returns the first request's error.
func NormalizeSkips(reqs []SkipRequest) ([]SkipRequest, error) {
	out := make([]SkipRequest, len(reqs))
	for i, r := range reqs {
		n, err := r.Normalize()
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// Validate checks a fenced reference.
func (r Ref) Validate() error {
	if r.Job == "" || r.Slot.IsZero() || r.Fence <= 0 {
		return invalid("ref %q@%v fence %d", r.Job, r.Slot, r.Fence)
	}
	return nil
}

// Validate checks a finish request.
func (p FinishParams) Validate() error {
	if err := p.Ref.Validate(); err != nil {
		return err
	}
	if !p.Outcome.Valid() {
		return invalid("finish %s: outcome %q", p.Job, p.Outcome)
	}
	if !p.RetryAt.IsZero() && p.Outcome == Succeeded {
		return invalid("finish %s: a retry of a run that succeeded", p.Job)
	}
	return nil
}

// Validate checks a renew request.
func (p RenewParams) Validate() error {
	if err := p.Ref.Validate(); err != nil {
		return err
	}
	if p.Lease <= 0 {
		return invalid("renew %s: lease %v is not positive", p.Job, p.Lease)
	}
	return nil
}

// Decision is what a claim does to a slot, decided from its current marker.
type Decision int

const (
	// Claim the slot: create the marker, take it over, or claim its retry.
	// Needs a new fence.
	DecideWin Decision = iota + 1
	// Leave the marker alone: it is held, waiting for its retry, final, or
	// absent for a takeover-only claim.
	DecideLose
	// Mark the expired running slot abandoned.
	DecideAbandon
	// Record the slot, which has no marker, skipped for overlap (Apply
	// gives it Reason ReasonOverlap). No fence.
	DecideSkip
	// Claim the slot, which has no marker, as DecideWin does, and supersede
	// the job's other running slots (Supersede). Needs a new fence.
	DecideReplace
	// Record the slot, which has no marker and is older than its job's
	// generation, skipped with Reason ReasonDataLoss. No fence.
	DecideDataLoss
	// Mark the slot, whose marker was claimed before its job's generation
	// began and is not held by a live lease, abandoned with Reason
	// ReasonDataLoss: the store may have lost a newer state of it.
	DecideAbandonDataLoss
	// Leave the slot, which has no marker, alone: the store's clock has not
	// reached the claim's NotBefore. Apply answers NotYet.
	DecideNotYet
)

// Changes reports whether the decision writes the slot's marker.
func (d Decision) Changes() bool { return d != DecideLose && d != DecideNotYet }

// Decide applies the claim rules to the slot's current marker (nil when the
// slot has none) at the store's time now; born is when the job's generation
// began (Generation.Born): a slot older than it gets no first marker but a
// skipped one, and a marker claimed before it is abandoned rather than taken
// over once no live lease holds it. running holds the markers of the
// job's running slots as the store has them at that moment, including
// changes made earlier in the same batch; Decide reads it only when
// r.ChecksOverlap() and m is nil, so callers may pass nil otherwise, and it
// ignores entries of other jobs, of r's own slot and in other states.
// Backends that keep their logic in Go (memory, SQLite) call it inside their
// atomic section; the others encode the same table in their own language,
// and storetest checks them alike.
func Decide(m *Marker, r ClaimRequest, now, born time.Time, running []Marker) Decision {
	if m == nil {
		if r.TakeoverOnly {
			return DecideLose
		}
		if BeforeGeneration(r.Slot, born) && !r.Term {
			return DecideDataLoss
		}
		// A replica whose clock runs ahead tries early; it gets the slot
		// when the store's clock reaches r.NotBefore.
		if now.Before(r.NotBefore) {
			return DecideNotYet
		}
		switch r.Overlap {
		case OverlapForbid:
			for _, o := range others(running, r.Job, r.Slot) {
				if now.Before(o.LeaseEnd) {
					return DecideSkip
				}
			}
		case OverlapReplace:
			if len(others(running, r.Job, r.Slot)) > 0 {
				return DecideReplace
			}
		}
		return DecideWin
	}
	// A marker claimed before the job's generation began came back from
	// before a loss (a restored backup): its slot may have finished since,
	// so once no live lease holds it, it is abandoned, never taken over.
	stale := !r.Term && m.ClaimedAt.Before(born)
	switch m.State {
	case StateReleased:
		if stale {
			return DecideAbandonDataLoss
		}
		return DecideWin
	case StateRetrying:
		if now.Before(m.LeaseEnd) {
			return DecideLose
		}
		if stale {
			return DecideAbandonDataLoss
		}
		return DecideWin
	case StateRunning:
		if now.Before(m.LeaseEnd) {
			return DecideLose
		}
		if stale {
			return DecideAbandonDataLoss
		}
		if r.OnCrash == OnCrashSkip || (r.MaxAttempts > 0 && m.Attempt >= r.MaxAttempts) {
			return DecideAbandon
		}
		return DecideWin
	}
	return DecideLose
}

// BeforeGeneration reports whether slot is older than a generation born at
// born: its first marker could have been created, and lost, before. A slot
// of the generation's very instant is not: a claim of it before the loss
// would have been made at or after that instant, and the loss and the new
// generation came later still, by a store clock that does not step back.
func BeforeGeneration(slot, born time.Time) bool { return slot.Before(born) }

// others returns the running markers of job's slots other than slot.
func others(running []Marker, job string, slot time.Time) []Marker {
	var out []Marker
	for _, o := range running {
		if o.State == StateRunning && o.Job == job && !o.Slot.Equal(slot) {
			out = append(out, o)
		}
	}
	return out
}

// Apply changes m (a copy of the current marker, or a new zero marker) as the
// decision says and returns the result the claim reports. replica and
// incarnation are the claimant's (ClaimParams). fence is used only for
// DecideWin and DecideReplace and must come from the job's fence source.
// For DecideReplace the caller also stores what Supersede returns and lists
// it in ClaimResult.Replaced.
func Apply(d Decision, m Marker, r ClaimRequest, replica, incarnation string, fence int64, now time.Time) (Marker, ClaimResult) {
	switch d {
	case DecideWin, DecideReplace:
		prev, manual := "", r.Manual
		if m.State != "" {
			prev, manual = m.Holder, m.Manual
		}
		retry := m.State == StateRetrying
		m = Marker{
			Job: r.Job, Slot: r.Slot, State: StateRunning, Holder: replica, Fence: fence,
			Attempt: m.Attempt + 1, ClaimedAt: now, LeaseEnd: now.Add(r.Lease),
			KeepUntil: r.Slot.Add(r.Retain), Manual: manual, Incarnation: incarnation,
		}
		return m, ClaimResult{Status: Won, Marker: m, Claim: Claim{
			Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: prev, Retry: retry,
		}}
	case DecideAbandon:
		m.State = StateAbandoned
		m.FinishedAt = now
		m.Reason = ReasonMaxAttempts
		if r.OnCrash == OnCrashSkip {
			m.Reason = ReasonOnCrashSkip
		}
		return m, ClaimResult{Status: Abandoned, Marker: m}
	case DecideAbandonDataLoss:
		m.State = StateAbandoned
		m.FinishedAt = now
		m.Reason = ReasonDataLoss
		return m, ClaimResult{Status: Abandoned, Marker: m}
	case DecideSkip:
		m = skipped(r.Job, r.Slot, r.Slot.Add(r.Retain), ReasonOverlap, replica, r.Manual, now)
		return m, ClaimResult{Status: Skipped, Marker: m}
	case DecideDataLoss:
		m = skipped(r.Job, r.Slot, r.Slot.Add(r.Retain), ReasonDataLoss, replica, r.Manual, now)
		return m, ClaimResult{Status: Skipped, Marker: m}
	case DecideNotYet:
		return m, ClaimResult{Status: NotYet, Remaining: r.NotBefore.Sub(now)}
	}
	res := ClaimResult{Marker: m}
	switch m.State {
	case "":
		res.Status = Absent
	case StateRunning:
		res.Status = Held
		res.Remaining = max(m.LeaseEnd.Sub(now), 0)
	case StateReleased:
		res.Status = Held
	case StateRetrying:
		res.Status = Waiting
		res.Remaining = max(m.LeaseEnd.Sub(now), 0)
	case StateAbandoned:
		res.Status = Abandoned
	case StateSkipped:
		res.Status = Skipped
	default:
		res.Status = Finished
	}
	return m, res
}

// Supersede returns the markers of running, the job's running markers as
// Decide saw them, that a claim decided DecideReplace and leaving won
// replaces, oldest slot first, as it leaves them: state replaced, the reason
// naming won's slot, lease ended and finished now, fence kept.
func Supersede(running []Marker, won Marker, now time.Time) []Marker {
	out := others(running, won.Job, won.Slot)
	slices.SortFunc(out, func(a, b Marker) int { return a.Slot.Compare(b.Slot) })
	for i := range out {
		out[i].State = StateReplaced
		out[i].Reason = ReasonReplacedBy + won.Slot.UTC().Format(time.RFC3339)
		out[i].LeaseEnd, out[i].FinishedAt = now, now
	}
	return out
}

// ApplySkip is Skip's decision table: a slot with no marker (m nil) is
// recorded skipped with r's reason, and changed reports true, unless the
// store's time now is before r.NotBefore, which answers NotYet; a slot with
// a marker is left alone, and the result is what a losing claim reports.
func ApplySkip(m *Marker, r SkipRequest, replica string, now time.Time) (Marker, ClaimResult, bool) {
	if m == nil {
		if now.Before(r.NotBefore) {
			return Marker{}, ClaimResult{Status: NotYet, Remaining: r.NotBefore.Sub(now)}, false
		}
		s := skipped(r.Job, r.Slot, r.Slot.Add(r.Retain), r.Reason, replica, false, now)
		return s, ClaimResult{Status: Skipped, Marker: s}, true
	}
	s, res := Apply(DecideLose, *m, ClaimRequest{Job: r.Job, Slot: r.Slot}, replica, "", 0, now)
	return s, res, false
}

// skipped is the marker of a slot recorded skipped at now.
func skipped(job string, slot, keep time.Time, reason, replica string, manual bool, now time.Time) Marker {
	return Marker{
		Job: job, Slot: slot, State: StateSkipped, Holder: replica, ClaimedAt: now, LeaseEnd: now,
		KeepUntil: keep, FinishedAt: now, Reason: reason, Manual: manual,
	}
}

// Final reports whether a marker in state s never runs again.
func (s State) Final() bool {
	return s == StateDone || s == StateAbandoned || s == StateSkipped || s == StateReplaced
}

// Matches reports whether m passes the filters of p.
func (p HistoryParams) Matches(m Marker) bool {
	return (p.Job == "" || m.Job == p.Job) && (p.State == "" || m.State == p.State) &&
		(p.Before.IsZero() || m.Slot.Before(p.Before))
}

// Prunable reports whether Prune may delete m at the store's time now.
func (m Marker) Prunable(now time.Time) bool {
	if !now.After(m.KeepUntil) {
		return false
	}
	return (m.State != StateRunning && m.State != StateRetrying) || !now.Before(m.LeaseEnd)
}
