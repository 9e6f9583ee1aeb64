package slotstore

import "time"

// DefaultRetain is how long a marker is kept when ClaimRequest.Retain is zero.
const DefaultRetain = 7 * 24 * time.Hour

// Normalize validates r and returns it with Slot truncated to the second in
// UTC, OnCrash defaulted and Retain defaulted. Backends call it for every
// request before touching state, so a bad request changes nothing.
func (r ClaimRequest) Normalize() (ClaimRequest, error) {
	if r.Job == "" {
		return r, invalid("claim: empty job")
	}
	if r.Slot.IsZero() {
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
	if r.Retain <= 0 {
		r.Retain = DefaultRetain
	}
	r.Slot = r.Slot.UTC().Truncate(time.Second)
	return r, nil
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
	// Claim the slot: create the marker or take it over. Needs a new fence.
	DecideWin Decision = iota + 1
	// Leave the marker alone: it is held, done or abandoned.
	DecideLose
	// Mark the expired running slot abandoned.
	DecideAbandon
)

// Decide applies the claim rules to the slot's current marker (nil when the
// slot has none) at the store's time now. Backends that keep their logic in
// Go (memory, SQLite) call it inside their atomic section; the others encode
// the same table in their own language, and storetest checks them alike.
func Decide(m *Marker, r ClaimRequest, now time.Time) Decision {
	if m == nil {
		if r.TakeoverOnly {
			return DecideLose
		}
		return DecideWin
	}
	switch m.State {
	case StateReleased:
		return DecideWin
	case StateRunning:
		if now.Before(m.LeaseEnd) {
			return DecideLose
		}
		if r.OnCrash == OnCrashSkip || (r.MaxAttempts > 0 && m.Attempt >= r.MaxAttempts) {
			return DecideAbandon
		}
		return DecideWin
	}
	return DecideLose
}

// Apply changes m (a copy of the current marker, or a new zero marker) as the
// decision says and returns the result the claim reports. fence is used only
// for DecideWin and must come from the job's fence source.
func Apply(d Decision, m Marker, r ClaimRequest, replica string, fence int64, now time.Time) (Marker, ClaimResult) {
	switch d {
	case DecideWin:
		prev := ""
		if m.State != "" {
			prev = m.Holder
		}
		m = Marker{
			Job: r.Job, Slot: r.Slot, State: StateRunning, Holder: replica, Fence: fence,
			Attempt: m.Attempt + 1, ClaimedAt: now, LeaseEnd: now.Add(r.Lease),
			KeepUntil: r.Slot.Add(r.Retain),
		}
		return m, ClaimResult{Status: Won, Marker: m, Claim: Claim{
			Ref: Ref{Job: r.Job, Slot: r.Slot, Fence: fence}, Attempt: m.Attempt, PrevHolder: prev,
		}}
	case DecideAbandon:
		m.State = StateAbandoned
		m.FinishedAt = now
		return m, ClaimResult{Status: Abandoned, Marker: m}
	}
	res := ClaimResult{Marker: m}
	switch m.State {
	case "":
		res.Status = Absent
	case StateRunning:
		res.Status = Held
		res.Remaining = m.LeaseEnd.Sub(now)
	case StateAbandoned:
		res.Status = Abandoned
	default:
		res.Status = Finished
	}
	return m, res
}

// Matches reports whether m passes the filters of p.
func (p HistoryParams) Matches(m Marker) bool {
	return (p.Job == "" || m.Job == p.Job) && (p.State == "" || m.State == p.State)
}

// Prunable reports whether Prune may delete m at the store's time now.
func (m Marker) Prunable(now time.Time) bool {
	if !now.After(m.KeepUntil) {
		return false
	}
	return m.State != StateRunning || !now.Before(m.LeaseEnd)
}
