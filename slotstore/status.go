package slotstore

import "fmt"

// Status is the result of one claim.
type Status int

const (
	// Won: the caller holds the slot; ClaimResult.Claim is its ticket.
	Won Status = iota + 1
	// Held: another claim holds the slot under a live lease; Remaining says
	// for how long, by the store's clock. (Skip, which never claims, also
	// answers Held for a released slot or one whose lease expired, with
	// Remaining zero.)
	Held
	// Finished: the slot is done or replaced; it never runs again.
	Finished
	// Abandoned: the slot is abandoned (now or earlier); it never runs again.
	Abandoned
	// Absent: a TakeoverOnly claim found no marker; nothing was created.
	Absent
	// Skipped: the slot is recorded skipped, now or earlier; it never runs.
	Skipped
	// Waiting: the slot failed and its retry is due later; Remaining says
	// when, by the store's clock. Nothing was changed.
	Waiting
	// NotYet: a Skip, or a Claim of a slot with no marker, came before its
	// NotBefore by the store's clock; Remaining says how long until it may
	// be recorded or claimed. Nothing was changed.
	NotYet
	// Superseded: the request names a spec (ClaimRequest.Spec,
	// SkipRequest.Spec) that is not the job's spec in force. Nothing was
	// changed; Marker holds the job and slot only.
	Superseded
	// Queued: a Claim with policy.OverlapQueue that would create the
	// slot's first marker came while another slot of the job runs under a
	// live lease (one won earlier in the same batch included), or under an
	// expired lease that a takeover may still win: the claim's OnCrash is
	// retry, attempts are left (MaxAttempts 0 or above that marker's
	// Attempt), and the marker was claimed at or after the job's generation
	// began (or the claim is a Term claim). Nothing was changed; Marker
	// holds the job and slot only, and Remaining is the least time left, by
	// the store's clock, on the leases of those slots: when the first of
	// them may end, 0 when only expired ones hold the claim back.
	Queued
)

func (s Status) String() string {
	switch s {
	case Won:
		return "won"
	case Held:
		return "held"
	case Finished:
		return "finished"
	case Abandoned:
		return "abandoned"
	case Absent:
		return "absent"
	case Skipped:
		return "skipped"
	case Waiting:
		return "waiting"
	case NotYet:
		return "not yet"
	case Superseded:
		return "superseded"
	case Queued:
		return "queued"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}
