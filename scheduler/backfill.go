package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// BackfillParams select the slots of a backfill: the job's scheduled slots
// from From to To, both included (To is capped where the running replicas'
// starting windows begin).
type BackfillParams struct {
	From, To time.Time
	// DryRun plans and runs nothing.
	DryRun bool
}

// BackfillResult is a backfill's plan and, once run, what each slot did.
type BackfillResult struct {
	Job   string
	Slots []BackfillSlot
}

// ToRun counts the slots the plan runs (Action BackfillRun).
func (r BackfillResult) ToRun() int {
	n := 0
	for _, s := range r.Slots {
		if s.Action == BackfillRun {
			n++
		}
	}
	return n
}

// BackfillSlot is one slot of a backfill.
type BackfillSlot struct {
	Slot time.Time
	// Action is BackfillRun or BackfillLeave.
	Action string
	// State and Reason are the slot's marker's when planned; State is
	// empty for a slot with no marker.
	State  slotstore.State
	Reason string
	// After a run: Fence and End are the claim's and how its run ended;
	// Err says why a slot to run was not run (another replica holds it,
	// the store refused it, the backfill was stopped).
	Fence int64
	End   RunEnd
	Err   string
}

// What a backfill does with a slot (BackfillSlot.Action).
const (
	// BackfillRun: the slot never ran (it has no marker, or was recorded
	// skipped: missed while no replica ran, left by the catch-up policy, or
	// skipped for overlap), so the backfill claims it and runs it.
	BackfillRun = "run"
	// BackfillLeave: the slot ran, is running, waits for a retry, was
	// skipped because the store lost its data and it may have run, or came
	// due before the store began to record the job; it is left alone.
	BackfillLeave = "leave"
)

// backfillResult is the engine's result as the facade's type.
func backfillResult(r engine.BackfillResult) BackfillResult {
	out := BackfillResult{Job: r.Job}
	if r.Slots != nil {
		out.Slots = make([]BackfillSlot, len(r.Slots))
	}
	for i, s := range r.Slots {
		out.Slots[i] = BackfillSlot{Slot: s.Slot, Action: s.Action, State: s.State, Reason: s.Reason,
			Fence: s.Fence, End: RunEnd(s.End), Err: s.Err}
	}
	return out
}

// MaxBackfill bounds the slots one backfill may cover.
const MaxBackfill = engine.MaxBackfill

// ErrBackfillRange is returned by Backfill for a range that is empty, not
// yet due, or holds more than MaxBackfill slots.
var ErrBackfillRange = engine.ErrBackfillRange

// Backfill runs the slots of job in p's range that never ran: those with no
// marker and those recorded skipped (a slot missed during an outage longer
// than the job's starting deadline, or left by its catch-up policy), one
// after another, each claimed like any slot: run once in the cluster, safe
// beside running replicas and safe to repeat (a slot a backfill ran is
// finished, and the next backfill leaves it alone). A slot skipped because
// the store lost its data is never run: it may have run before the loss;
// nor is a slot older than the job's history (less a minute), whose marker
// may have been deleted after it ran. Slots whose starting window is still
// open (starting_deadline + jitter) are left to the running replicas: To is
// capped before them.
// Backfill returns when every slot to run has ended; the result says what
// each did. With p.DryRun it returns the plan and changes nothing in the
// store but to enroll the job, as any replica of it does.
// A paused job answers ErrPaused; a range that is not in the past, has no
// slot or too many, ErrBackfillRange.
//
// Like Trigger, it goes through Run's engine and store while Run runs, and
// otherwise through the store WithStore gave or the configured one.
func (s *Scheduler) Backfill(ctx context.Context, job string, params BackfillParams) (BackfillResult, error) {
	p := engine.BackfillParams(params)
	res, err := s.eng.Backfill(ctx, job, p)
	var st slotstore.Store
	if errors.Is(err, engine.ErrNotRunning) || s.notRunning(err) {
		st = s.store
		if st == nil {
			opened, oerr := backend.OpenLogged(ctx, s.cfg.backendConfig(), s.log)
			if oerr != nil {
				return BackfillResult{Job: job}, oerr
			}
			defer opened.Close()
			st = opened
		}
		res, err = s.eng.BackfillOn(ctx, st, job, p) // reads a schedule held as data from st
	}
	out := backfillResult(res)
	if st = s.actStore(st); st != nil && !params.DryRun {
		s.record(ctx, st, backfillAct(job, params, out, err))
	}
	return out, err
}
