package rules

import (
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// DefaultRetain is how long after its slot a marker is kept when the
// request's Retain is zero.
const DefaultRetain = 7 * 24 * time.Hour

// NormalizeClaim validates r and returns it with Slot truncated to the
// second in UTC, OnCrash, Overlap and Retain defaulted, NotBefore in UTC and
// NotAfter in UTC to the microsecond. Backends call it, through NormalizeClaims, for every request before
// touching state, so a bad request changes nothing.
func NormalizeClaim(r slotstore.ClaimRequest) (slotstore.ClaimRequest, error) {
	if r.Job == "" {
		return r, invalid("claim: empty job")
	}
	// Judged after truncation: a slot within a second after the zero Time
	// truncates to it, and a claim of it would hand out a Ref that Renew,
	// Finish and Release refuse (ValidateRef).
	if r.Slot.UTC().Truncate(time.Second).IsZero() {
		return r, invalid("claim %s: zero slot", r.Job)
	}
	if r.Lease <= 0 {
		return r, invalid("claim %s: lease %v is not positive", r.Job, r.Lease)
	}
	if r.OnCrash == "" {
		r.OnCrash = policy.OnCrashRetry
	} else if !r.OnCrash.Valid() {
		return r, invalid("claim %s: on_crash %q", r.Job, r.OnCrash)
	}
	if r.MaxAttempts < 0 {
		return r, invalid("claim %s: max attempts %d", r.Job, r.MaxAttempts)
	}
	if r.Overlap == "" {
		r.Overlap = policy.OverlapAllow
	} else if !r.Overlap.Valid() {
		return r, invalid("claim %s: overlap %q", r.Job, r.Overlap)
	}
	if r.Backfill && r.Overlap != policy.OverlapAllow && r.Overlap != policy.OverlapForbid {
		return r, invalid("claim %s: backfill with overlap %q (allow or forbid only)", r.Job, r.Overlap)
	}
	if r.Backfill && r.Term {
		return r, invalid("claim %s: backfill of a term", r.Job)
	}
	if r.Retain <= 0 {
		r.Retain = DefaultRetain
	}
	if r.RunsAfterDataLoss && !r.Backfill {
		// Exempt from the generation rules, as a term is: the stores
		// decide it as one (a term has no other rule of its own).
		r.Term = true
	}
	r.Slot = r.Slot.UTC().Truncate(time.Second)
	if !r.NotBefore.IsZero() {
		r.NotBefore = r.NotBefore.UTC()
	}
	if !r.NotAfter.IsZero() {
		// Every backend keeps it to the microsecond, as Redis's and
		// Postgres's clocks read.
		r.NotAfter = r.NotAfter.UTC().Truncate(time.Microsecond)
		if r.NotAfter.Before(r.NotBefore) {
			return r, invalid("claim %s: not after %v is before not before %v", r.Job, r.NotAfter, r.NotBefore)
		}
	}
	return r, nil
}

// NormalizeClaims normalizes every request of a Claim batch into a new
// slice, or returns the first request's error: a batch with a bad request
// changes nothing.
func NormalizeClaims(reqs []slotstore.ClaimRequest) ([]slotstore.ClaimRequest, error) {
	out := make([]slotstore.ClaimRequest, len(reqs))
	for i, r := range reqs {
		n, err := NormalizeClaim(r)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// ChecksOverlap reports whether Decide may need the job's running markers
// for r, a normalized request: it does only for a claim with OverlapForbid,
// OverlapReplace or OverlapQueue that may create the slot's first marker,
// and for a Backfill claim with OverlapForbid, which may win a skipped slot.
func ChecksOverlap(r slotstore.ClaimRequest) bool {
	return (!r.TakeoverOnly || r.Backfill) && r.Overlap != policy.OverlapAllow
}

// ReadsRunning reports whether Decide reads the job's running markers for
// r, a normalized request, given the slot's current marker m (nil for
// none): ChecksOverlap(r), and the claim may create the first marker or
// backfill m.
func ReadsRunning(m *slotstore.Marker, r slotstore.ClaimRequest) bool {
	if !ChecksOverlap(r) {
		return false
	}
	if m == nil {
		return !r.TakeoverOnly
	}
	return r.Backfill && m.State == slotstore.StateSkipped
}

// NormalizeSkip validates r and returns it with Slot truncated to the
// second in UTC, Retain defaulted and NotBefore in UTC.
func NormalizeSkip(r slotstore.SkipRequest) (slotstore.SkipRequest, error) {
	if r.Job == "" {
		return r, invalid("skip: empty job")
	}
	if r.Slot.UTC().Truncate(time.Second).IsZero() { // as NormalizeClaim
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
func NormalizeSkips(reqs []slotstore.SkipRequest) ([]slotstore.SkipRequest, error) {
	out := make([]slotstore.SkipRequest, len(reqs))
	for i, r := range reqs {
		n, err := NormalizeSkip(r)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// NormalizeJobs validates the jobs of an Enroll, none of which may be
// empty, and returns them.
func NormalizeJobs(p slotstore.EnrollParams) ([]string, error) {
	for _, j := range p.Jobs {
		if j == "" {
			return nil, invalid("enroll: empty job")
		}
	}
	return p.Jobs, nil
}

// ValidateRef checks the reference a fenced mutation presents.
func ValidateRef(r slotstore.Ref) error {
	if r.Job == "" || r.Slot.IsZero() || r.Fence <= 0 {
		return invalid("ref %q@%v fence %d", r.Job, r.Slot, r.Fence)
	}
	return nil
}

// ValidateFinish checks a Finish request.
func ValidateFinish(p slotstore.FinishParams) error {
	if err := ValidateRef(p.Ref); err != nil {
		return err
	}
	if !p.Outcome.Valid() {
		return invalid("finish %s: outcome %q", p.Job, p.Outcome)
	}
	if !p.RetryAt.IsZero() && p.Outcome == slotstore.Succeeded {
		return invalid("finish %s: a retry of a run that succeeded", p.Job)
	}
	return nil
}

// ValidateRenew checks a Renew request.
func ValidateRenew(p slotstore.RenewParams) error {
	if err := ValidateRef(p.Ref); err != nil {
		return err
	}
	if p.Lease <= 0 {
		return invalid("renew %s: lease %v is not positive", p.Job, p.Lease)
	}
	return nil
}

// Matches reports whether m passes the filters of a History request.
func Matches(p slotstore.HistoryParams, m slotstore.Marker) bool {
	return (p.Job == "" || m.Job == p.Job) && (p.State == "" || m.State == p.State) &&
		(p.Before.IsZero() || m.Slot.Before(p.Before))
}

// Prunable reports whether Prune may delete m at the store's time now: its
// retention has ended, and it is neither running under a live lease nor
// retrying before its retry is due.
func Prunable(m slotstore.Marker, now time.Time) bool {
	if !now.After(m.KeepUntil) {
		return false
	}
	return (m.State != slotstore.StateRunning && m.State != slotstore.StateRetrying) || !now.Before(m.LeaseEnd)
}
