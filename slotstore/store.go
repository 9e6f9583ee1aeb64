package slotstore

import (
	"context"
	"fmt"
	"time"
)

// Store holds slot markers and fences. See the package documentation for the
// guarantees every implementation makes.
type Store interface {
	// Claim tries every request of the batch and returns one result per
	// request, in request order. A non-nil error means no result is known;
	// with IsOutcomeUnknown(err) some claims may have won.
	Claim(ctx context.Context, p ClaimParams) ([]ClaimResult, error)
	// Renew extends the lease of a running slot to Lease from now (store
	// clock). ErrLeaseLost if p.Ref is no longer the slot's current claim.
	Renew(ctx context.Context, p RenewParams) error
	// Finish records the outcome of a run and makes the slot final.
	// ErrLeaseLost if p.Ref is no longer the slot's current claim. Finish
	// of a slot already done under the same fence returns nil and changes
	// nothing, so a retried Finish whose first reply was lost, or one after
	// the slot was completed in the caller's own transaction, is not
	// mistaken for a lost lease.
	Finish(ctx context.Context, p FinishParams) error
	// Release ends the claim without an outcome; the next Claim of the
	// slot wins at once with attempt+1. ErrLeaseLost if p.Ref is no longer
	// the slot's current claim.
	Release(ctx context.Context, ref Ref) error
	// History lists markers, newest slot first.
	History(ctx context.Context, p HistoryParams) ([]Marker, error)
	// Prune deletes markers whose retention has ended and that are not
	// running under a live lease. It returns how many it deleted.
	Prune(ctx context.Context) (int, error)
	// Close releases the store's resources. Calls after Close return
	// ErrClosed.
	Close() error
}

// OnCrash says what a claim does with a running slot whose lease expired.
type OnCrash string

const (
	// OnCrashRetry takes the slot over with attempt+1 (the default).
	OnCrashRetry OnCrash = "retry"
	// OnCrashSkip marks the slot abandoned; nobody runs it again.
	OnCrashSkip OnCrash = "skip"
)

// ClaimRequest asks for one slot.
type ClaimRequest struct {
	Job  string
	Slot time.Time // truncated to the second and stored in UTC
	// Lease is how long the winner may act without renewing. Required.
	Lease time.Duration
	// OnCrash decides what happens to an expired running slot; empty means
	// OnCrashRetry.
	OnCrash OnCrash
	// MaxAttempts bounds how many attempts a slot may have when earlier
	// holders' leases expired: a takeover that would make attempt
	// MaxAttempts+1 marks the slot abandoned instead. Zero means no bound.
	// Claiming a released slot is never refused, but it is an attempt: its
	// attempt number grows and counts toward the bound.
	MaxAttempts int
	// Retain is how long after Slot the marker is kept; zero keeps it until
	// a store-specific default of 7 days.
	Retain time.Duration
	// TakeoverOnly claims the slot only if it has a marker: a slot with
	// none is answered Absent and no marker is created. Callers that watch
	// a slot another replica claimed set it, so a slot whose marker was
	// pruned can never be run again as if new.
	TakeoverOnly bool
}

// ClaimParams is one batch of claims made by one replica.
type ClaimParams struct {
	Replica  string
	Requests []ClaimRequest
}

// Status is the result of one claim.
type Status int

const (
	// Won: the caller holds the slot; ClaimResult.Claim is its ticket.
	Won Status = iota + 1
	// Held: another claim holds the slot under a live lease; Remaining says
	// for how long, by the store's clock.
	Held
	// Finished: the slot is done; it never runs again.
	Finished
	// Abandoned: the slot is abandoned (now or earlier); it never runs again.
	Abandoned
	// Absent: a TakeoverOnly claim found no marker; nothing was created.
	Absent
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
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Ref names one claim of a slot: the scope of every fenced mutation.
type Ref struct {
	Job   string
	Slot  time.Time
	Fence int64
}

// Claim is what a winning claim returns.
type Claim struct {
	Ref
	Attempt int
	// PrevHolder is the replica whose expired or released claim this one
	// took over; empty for a first claim.
	PrevHolder string
}

// Takeover reports whether the claim took the slot over from an earlier
// holder.
func (c Claim) Takeover() bool { return c.Attempt > 1 }

// ClaimResult is the answer to one ClaimRequest.
type ClaimResult struct {
	Status Status
	// Claim is set when Status is Won.
	Claim Claim
	// Marker is the slot's marker as the claim left it.
	Marker Marker
	// Remaining is the holder's remaining lease when Status is Held.
	Remaining time.Duration
}

// Err returns nil for a won claim and an error wrapping ErrSlotTaken
// otherwise.
func (r ClaimResult) Err() error {
	if r.Status == Won {
		return nil
	}
	return fmt.Errorf("%w: %s@%s is %s", ErrSlotTaken, r.Marker.Job, r.Marker.Slot.Format(time.RFC3339), r.Status)
}

// RenewParams extends a lease.
type RenewParams struct {
	Ref
	Lease time.Duration
}

// Outcome is how a finished run ended.
type Outcome string

const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed"
	TimedOut  Outcome = "timeout"
)

// Valid reports whether o is one of the defined outcomes.
func (o Outcome) Valid() bool {
	return o == Succeeded || o == Failed || o == TimedOut
}

// FinishParams records a run's outcome.
type FinishParams struct {
	Ref
	Outcome  Outcome
	Error    string        // the job's error text, if any
	Duration time.Duration // how long the run took, on the holder's clock
}

// HistoryParams selects markers.
type HistoryParams struct {
	Job   string // empty for every job
	State State  // empty for every state
	Limit int    // at most this many; zero means 100
}

// State is a marker's state.
type State string

const (
	StateRunning   State = "running"
	StateDone      State = "done"
	StateReleased  State = "released"
	StateAbandoned State = "abandoned"
)

// Marker is the store's record of a slot.
type Marker struct {
	Job       string
	Slot      time.Time
	State     State
	Holder    string // replica of the current or last claim
	Fence     int64  // fence of the current or last claim
	Attempt   int
	ClaimedAt time.Time // when the current or last claim was made (store clock)
	LeaseEnd  time.Time // when the lease ends or ended (store clock)
	KeepUntil time.Time // Slot + Retain: Prune may delete the marker after it
	// Set once done:
	FinishedAt time.Time
	Outcome    Outcome
	Error      string
	Duration   time.Duration
}
