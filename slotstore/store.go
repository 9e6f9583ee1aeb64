package slotstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/policy"
)

// Store holds slot markers and fences. See the package documentation for the
// guarantees every implementation makes.
type Store interface {
	// Claim tries every request of the batch and returns one result per
	// request, in request order. A non-nil error means no result is known;
	// when errors.Is(err, ErrOutcomeUnknown), some claims may have won (see
	// Failures in the package documentation).
	Claim(ctx context.Context, p ClaimParams) ([]ClaimResult, error)
	// Renew extends the lease of a running slot to Lease from now (store
	// clock). ErrLeaseLost if p.Ref is no longer the slot's current claim;
	// ErrFinished if the slot is done or retrying under p.Ref's own fence
	// (its run recorded its end, as CompleteTx does): the lease is no longer
	// needed, and it was not lost.
	Renew(ctx context.Context, p RenewParams) error
	// Finish records the outcome of a run and makes the slot final, or,
	// with p.RetryAt set, puts it in state retrying until then.
	// ErrLeaseLost if p.Ref is no longer the slot's current claim. Finish
	// of a slot already done or retrying under the same fence returns nil
	// and changes nothing, so a retried Finish whose first reply was lost,
	// or one after the slot was completed in the caller's own transaction,
	// is not mistaken for a lost lease.
	Finish(ctx context.Context, p FinishParams) error
	// Release ends the claim without an outcome; the next Claim of the
	// slot wins at once with attempt+1. ErrLeaseLost if p.Ref is no longer
	// the slot's current claim.
	Release(ctx context.Context, ref Ref) error
	// Skip records every slot of the batch that has no marker as skipped,
	// with the request's reason, and returns one result per request, in
	// request order: Skipped for those, and for a slot that has a marker,
	// which Skip leaves alone, its status as a losing claim reports it. A
	// request whose NotBefore the store's clock has not reached records
	// nothing and answers NotYet. Like Claim, a batch is one round trip,
	// and a batch with an invalid request fails with ErrInvalid and changes
	// nothing.
	Skip(ctx context.Context, p SkipParams) ([]ClaimResult, error)
	// Enroll begins the generation of every job of p that has none, at the
	// store's time now, and returns each job's generation, in request
	// order. A replica enrolls its jobs before it claims their slots: a
	// claim never creates the first marker of a slot older than its job's
	// generation (see Generation). Enrolling a job again changes nothing
	// of its generation. With p.Specs, Enroll also offers each job's spec
	// to the catalog, which keeps the one in force per the rule of The
	// catalog in the package documentation, and returns it in
	// Generation.Spec, in the same atomic step per job.
	Enroll(ctx context.Context, p EnrollParams) ([]Generation, error)
	// Catalog lists the catalog's entries, sorted by job: the spec in force
	// of each job some replica enrolled with a spec, the replicas carrying
	// it and the specs in force before.
	Catalog(ctx context.Context, p CatalogParams) ([]CatalogEntry, error)
	// WriteSchedules applies each write of the batch in its own atomic
	// step, in order, and returns one result per write, in request order
	// (see Schedules held as data in the package documentation). A batch
	// with an invalid write fails with ErrInvalid and changes nothing; a
	// write whose precondition fails answers it in its result and changes
	// nothing of its schedule.
	WriteSchedules(ctx context.Context, p WriteSchedulesParams) ([]ScheduleResult, error)
	// Schedules lists the live schedules held as data, sorted by ID.
	Schedules(ctx context.Context, p ScheduleParams) ([]CatalogEntry, error)
	// ScheduleChanges lists the schedules written after p.After, deleted
	// ones included, in the order of their last write, and the newest
	// write's sequence number: the feed replicas follow.
	ScheduleChanges(ctx context.Context, p ChangesParams) (Changes, error)
	// SetPause pauses or resumes one job, or the whole cluster when p.Job
	// is empty. It is idempotent, and durable as the markers are. A pause
	// records p.By and p.Reason with the store's time (Pauses.Notes); a
	// pause of what is already paused records them anew; a resume deletes
	// them.
	SetPause(ctx context.Context, p PauseParams) error
	// Pauses returns what is paused, with who paused it, when and why.
	Pauses(ctx context.Context) (Pauses, error)
	// Beat records that a replica is alive, replacing its last beat, for
	// p.TTL by the store's clock. Beats are for people (the dashboard's
	// cluster view); nothing of the guarantees depends on them.
	Beat(ctx context.Context, p Beat) error
	// Replicas lists the replicas that beat within BeatKeep, sorted by
	// name, each with its last beat and whether that beat's TTL still
	// runs. Beats older than that are deleted (by Replicas, Beat or Prune).
	Replicas(ctx context.Context) ([]Replica, error)
	// History lists markers, newest slot first.
	History(ctx context.Context, p HistoryParams) ([]Marker, error)
	// AppendAction appends a to the actions log, in one atomic step, with
	// the next Seq and the store's time as At, and returns the entry as
	// stored. An invalid a is ErrInvalid, wrapped with the field's name,
	// and appends nothing. Entries are never changed afterwards (The
	// actions log in the package documentation).
	AppendAction(ctx context.Context, a Action) (Action, error)
	// Actions lists the entries of the actions log p selects, newest
	// first (descending Seq), at most p.Limit.
	Actions(ctx context.Context, p ActionsParams) ([]Action, error)
	// Prune deletes markers whose retention has ended and that are not
	// running under a live lease or retrying before their retry is due,
	// and the entries of the actions log whose At + Retain is before the
	// store's clock. It returns how many of both it deleted.
	Prune(ctx context.Context) (int, error)
	// Close releases the store's resources. Calls after Close return
	// ErrClosed.
	Close() error
}

// ClaimRequest asks for one slot.
type ClaimRequest struct {
	Job  string
	Slot time.Time // truncated to the second and stored in UTC
	// Lease is how long the winner may act without renewing. Required.
	Lease time.Duration
	// OnCrash decides what a claim does with the slot when it is running
	// under an expired lease; empty means policy.OnCrashRetry.
	OnCrash policy.OnCrash
	// MaxAttempts bounds how many attempts a slot may have when earlier
	// holders' leases expired: a takeover that would make attempt
	// MaxAttempts+1 marks the slot abandoned instead. Zero means no bound.
	// Claiming a released slot is never refused, but it is an attempt: its
	// attempt number grows and counts toward the bound.
	MaxAttempts int
	// Retain is how long after Slot the marker is kept; zero means 7 days.
	Retain time.Duration
	// TakeoverOnly claims the slot only if it has a marker: a slot with
	// none is answered Absent and no marker is created. Callers that watch
	// a slot another replica claimed set it, so a slot whose marker was
	// pruned can never be run again as if new.
	TakeoverOnly bool
	// Overlap decides what a claim that would create the slot's first
	// marker does while other slots of the job are running; empty means
	// policy.OverlapAllow. Takeovers, claims of released slots and retries
	// are never checked.
	Overlap policy.Overlap
	// Spec, when not empty, is the fingerprint of the spec the claim is
	// made under: a claim of a job whose spec in force has another
	// fingerprint changes nothing and answers Superseded (The catalog).
	Spec string
	// Term marks a slot that is not a run but a standing lease, such as a
	// duty's leadership term: it never finishes, so a claim of it that
	// creates its marker wins whatever the job's generation (a new term
	// after the store lost the old one is what must happen).
	Term bool
	// RunsAfterDataLoss declares the job's effect once per slot whoever
	// runs it and however often (through a fence helper that records the
	// slot, a CompleteTx, or writes idempotent on the run's key): the
	// claim is exempt from the generation rules, as a Term claim is. A slot
	// older than its job's generation, whose marker the store may have
	// lost after it ran, is won as any first claim is (attempt 1, a new
	// fence) rather than recorded skipped for data loss; a marker claimed
	// before the generation began is taken over as any other. The effect's
	// own record then refuses a repeat. Ignored with Backfill: a slot
	// skipped for data loss is never backfilled.
	RunsAfterDataLoss bool
	// NotBefore, when set, is the earliest time by the store's clock at
	// which the claim may create the slot's first marker; before it the
	// claim changes nothing and answers NotYet. A replica sets it to the
	// slot, or to slot − ClaimLead when it claims ahead, so one whose
	// clock runs ahead gets the slot no earlier than that: no marker then
	// exists before slot − ClaimLead, and every marker a loss of data can
	// take is of a slot the generation that begins after the loss does not
	// cover (guarantee 3). It does not bind takeovers.
	NotBefore time.Time
	// NotAfter, when set, is the latest time by the store's clock at which
	// the claim may create the slot's first marker: the end of the slot's
	// starting window. A claim that would create it later records the slot
	// skipped with ReasonLate instead (Status Skipped), so a replica whose
	// clock runs behind cannot start a slot late by the store's clock. Like
	// NotBefore it binds first markers only: not takeovers, claims of
	// released or retrying slots, nor a Backfill claim's win of a skipped
	// slot. It is kept to the microsecond and must not be before NotBefore
	// (ErrInvalid).
	NotAfter time.Time
	// Manual marks the slot as a manual trigger's: a claim that creates
	// the slot's marker (won, or skipped for overlap) records it in
	// Marker.Manual; later claims of the slot keep the marker's own.
	Manual bool
	// Backfill claims a slot that never ran. It is a claim like any other,
	// and in one case more: a slot whose marker is skipped, for any reason
	// but ReasonDataLoss, and was recorded skipped at or after its job's
	// generation began (Marker.ClaimedAt not before Generation.Born), of a
	// slot that generation covers (Generation.Covers: a skip recorded after
	// a loss of data says nothing of whether an older slot ran before it),
	// is won as a first claim is: the marker becomes running with Attempt
	// 1, a new fence above every fence of the job, this claim's Holder,
	// Incarnation, Lease and Retain, Manual false, Backfill true (as one that
	// creates it sets), no Reason, Outcome or Error. Before NotBefore by the
	// store's clock such a claim changes nothing and answers NotYet, as a
	// first claim would; with Overlap forbid, one made while another slot of
	// the job runs under a live lease changes nothing and answers Skipped.
	// Overlap must be allow or forbid with Backfill (ErrInvalid else); Term
	// must be false. Once the store's clock has reached Slot + Retain (the
	// slot may have run and its marker been pruned), a Backfill claim is a
	// TakeoverOnly claim without Backfill: it creates no marker; a skipped one loses.
	Backfill bool
}

// ClaimParams is one batch of claims made by one replica.
type ClaimParams struct {
	Replica string
	// Incarnation names the claiming process among those that share the
	// replica name (a random value chosen at start-up); the marker keeps
	// it, so a process that lost a claim's reply can tell its own claim
	// from that of another process started with the same name. Optional.
	Incarnation string
	Requests    []ClaimRequest
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
	// PrevHolder is the replica whose expired, released or failed claim
	// this one took over; empty for a first claim.
	PrevHolder string
	// Retry is true when the claim won a retrying slot: the retry of a
	// failed run, not the takeover of a crashed one.
	Retry bool
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
	// Remaining is the holder's remaining lease when Status is Held, the
	// time until the retry is due when Status is Waiting, the time until
	// the skip may be recorded when Status is NotYet, and the least
	// remaining lease of the job's other running slots that hold the
	// claim back (0 for an expired one) when Status is Queued.
	Remaining time.Duration
	// Replaced lists the claims a winning claim with
	// policy.OverlapReplace superseded, oldest slot first; empty otherwise.
	Replaced []Ref
	// Answered is the store's clock as it answered the claim's batch:
	// read after every decision of the batch (at or after Marker.ClaimedAt
	// of a claim won) and before its reply left the store. A batch's later
	// decisions and writes separate the two by milliseconds, which a run
	// claimed ahead of its slot need not wait for: it counts its wait for
	// the slot's instant from Answered. Zero when the store does not tell
	// it (etcd, whose clock is read anew at each decision, and a Skip's
	// results); the decision's time is then the latest the store's clock
	// is known to have read.
	Answered time.Time
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
	// RetryAt, when not zero, asks for another attempt at that instant (by
	// the store's clock): the slot goes to StateRetrying with LeaseEnd =
	// RetryAt instead of StateDone, and the next claim at or after RetryAt
	// wins it with attempt+1 and a new fence, whatever its OnCrash and
	// MaxAttempts (the caller bounds retries). Only with Outcome Failed or
	// TimedOut.
	RetryAt time.Time
}

// SkipParams is one batch of slots recorded skipped by one replica.
type SkipParams struct {
	Replica  string
	Requests []SkipRequest
}

// SkipRequest names one slot to record skipped.
type SkipRequest struct {
	Job  string
	Slot time.Time // truncated to the second and stored in UTC
	// Reason says why, for history (the engine uses "missed",
	// "catch_up"...). Required.
	Reason string
	// Retain is as ClaimRequest.Retain.
	Retain time.Duration
	// NotBefore, when not zero, is the earliest instant by the store's
	// clock at which the slot may be recorded skipped: a request that
	// comes earlier records nothing and answers NotYet. A replica sets it
	// to slot + starting deadline for a slot it judges missed, so a
	// replica whose clock runs fast cannot record as missed a slot the
	// others may still run (guarantee 7).
	NotBefore time.Time
	// Spec is as ClaimRequest.Spec: a skip made under a spec that is not
	// the job's spec in force records nothing and answers Superseded.
	Spec string
}

// EnrollParams names the jobs a replica is about to claim slots of.
type EnrollParams struct {
	Jobs []string
	// Replica names who enrolls, for the catalog: required with Specs, at
	// most 200 bytes.
	Replica string
	// Specs, when not nil, holds the spec of each job of Jobs, in order
	// (ErrInvalid if the lengths differ).
	Specs []Spec
}

// Generation is the store's record of how far back its knowledge of a job
// goes. It begins when a replica first enrolls or claims the job, and
// begins anew, at the store's time then, when the store has lost what it
// knew (a Redis restarted empty or flushed, a database file or schema
// replaced): every marker of the job from before may be gone. A claim that
// would create the first marker of a slot the generation does not cover
// (older than Born + ClaimLead, Covers) does not win:
// the slot is recorded skipped with ReasonDataLoss, because it may have run
// before the loss, and a finished slot must never run again (guarantee 3).
// Likewise a marker claimed before Born (one a restored backup brought back,
// perhaps still "running" though the slot finished since) is never taken
// over, retried or reclaimed: once no live lease holds it, a claim marks it
// abandoned with ReasonDataLoss. Term claims, and claims that declare the
// job's effect once per slot (ClaimRequest.RunsAfterDataLoss), are exempt
// from both rules.
type Generation struct {
	Job  string
	Born time.Time // by the store's clock
	// Newest is the slot of the job's newest marker, whatever its state
	// (a skipped slot's too), zero when the store holds none. A replica
	// reads it at start-up, in the batch that enrolls its jobs, to learn
	// which slots came due while no replica ran the job.
	Newest time.Time
	// Spec is the job's spec in force once the enrolment was applied
	// (Fingerprint empty when the job has none): the enrolled spec if it
	// took force or already was, another if the enrolled one conflicts.
	Spec SpecRecord
}

// ClaimLead is how long before its slot, by the store's clock, a claim may
// create the slot's first marker: a replica claims a slot ahead, so that it
// holds it by the slot's instant and starts it then, and sets its claim's
// NotBefore to slot − ClaimLead. It is the same in every store and build,
// for Covers relies on it: no marker of a slot exists before slot −
// ClaimLead by the store's clock.
const ClaimLead = time.Second

// Covers reports whether the generation's record of the job reaches back to
// slot: slot is not older than Born + ClaimLead (From). A claim, unless a
// Term claim, creates the first marker only of a slot its job's generation
// covers; any other is recorded skipped with ReasonDataLoss, because its
// marker could have been created, and lost, before the generation began: a
// claim of a slot is made from ClaimLead before it, so a slot a ClaimLead
// after Born is the first whose every claim before a loss would have been
// made at or after Born, and the loss and the new generation came later
// still, by a store clock that does not step back.
func (g Generation) Covers(slot time.Time) bool { return !slot.Before(g.From()) }

// From is the first instant whose slot the generation covers: Born +
// ClaimLead.
func (g Generation) From() time.Time { return g.Born.Add(ClaimLead) }

// HistoryParams selects markers.
type HistoryParams struct {
	Job   string // empty for every job
	State State  // empty for every state
	Limit int    // at most this many; zero means 100
	// Before, when not zero, lists only markers whose slot is before it:
	// the next page after one whose oldest slot it is (markers of that very
	// slot beyond the page are passed over; ask for Before = that slot +
	// 1 s to read them again).
	Before time.Time
}

// State is a marker's state.
type State string

const (
	StateRunning   State = "running"
	StateDone      State = "done"
	StateReleased  State = "released"
	StateAbandoned State = "abandoned"
	// StateSkipped: the slot never ran; Reason says why. Final.
	StateSkipped State = "skipped"
	// StateReplaced: the run was superseded by a claim of a later slot
	// with policy.OverlapReplace; Reason names it. Final.
	StateReplaced State = "replaced"
	// StateRetrying: the run failed and the slot waits for its retry at
	// LeaseEnd. Not final.
	StateRetrying State = "retrying"
)

// Final reports whether a marker in state s never runs again.
func (s State) Final() bool {
	return s == StateDone || s == StateAbandoned || s == StateSkipped || s == StateReplaced
}

// Reasons the store itself records in Marker.Reason that callers compare.
// Marker.Reason lists every reason the store records.
const (
	// ReasonOverlap: skipped by policy.OverlapForbid.
	ReasonOverlap = "overlap"
	// ReasonDataLoss: skipped because the slot is older than its job's
	// generation, so the store cannot know whether it ran, or abandoned
	// because its marker was claimed before the generation began, so the
	// store may have lost a newer state of it (Generation).
	ReasonDataLoss = "data loss: the slot predates the store's record of the job"
	// ReasonLate: skipped because a claim came after its NotAfter by the
	// store's clock, the end of the slot's starting window. Replicas record
	// a slot whose window closed by their own clock with the same reason.
	ReasonLate = "missed: late"
)

// Marker is the store's record of a slot.
type Marker struct {
	Job       string
	Slot      time.Time
	State     State
	Holder    string    // replica of the current or last claim, or that recorded the slot skipped
	Fence     int64     // fence of the current or last claim; 0 for a skipped slot
	Attempt   int       // 0 for a skipped slot
	ClaimedAt time.Time // when the current or last claim was made, or the slot skipped (store clock)
	// LeaseEnd is when the lease ends or ended, by the store's clock; for a
	// retrying slot, when the retry is due.
	LeaseEnd  time.Time
	KeepUntil time.Time // Slot + Retain: Prune may delete the marker after it
	// Set once done, retrying, abandoned, skipped or replaced:
	FinishedAt time.Time
	// Set once done or retrying:
	Outcome  Outcome
	Error    string
	Duration time.Duration
	// Reason says why the slot was skipped, replaced or abandoned. The
	// store records these:
	//
	//   - "overlap" (ReasonOverlap): skipped, because a claim with
	//     policy.OverlapForbid came while another slot of the job ran under
	//     a live lease;
	//   - "on_crash skip": abandoned, because its holder's lease expired
	//     and the next claim said policy.OnCrashSkip;
	//   - "max attempts": abandoned, because its holder's lease expired and
	//     the claim's MaxAttempts were spent;
	//   - "replaced by " and the RFC 3339 slot of the winning claim
	//     ("replaced by 2026-11-29T02:00:00Z"): replaced by a claim of that
	//     slot with policy.OverlapReplace;
	//   - ReasonDataLoss ("data loss: the slot predates the store's record
	//     of the job"): skipped, or abandoned, because the store may have
	//     lost what it knew of the slot (Generation).
	//
	// A slot recorded by Skip has the reason its caller gave
	// (SkipRequest.Reason); the engine records "missed: " and why, and
	// "catch_up " and the job's policy.CatchUp.
	Reason string
	// Manual is true for the slot of a manual trigger.
	Manual   bool
	Backfill bool // a Backfill claim won the slot; its takeovers keep the mark
	// Incarnation is ClaimParams.Incarnation of the current or last claim.
	Incarnation string
}

// Ref returns the claim the marker records.
func (m Marker) Ref() Ref { return Ref{Job: m.Job, Slot: m.Slot, Fence: m.Fence} }
