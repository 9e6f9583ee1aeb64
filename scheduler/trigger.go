package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// ErrBusy is returned by Trigger for a job with overlap: forbid while one of
// its slots is running somewhere.
var ErrBusy = engine.ErrBusy

// ErrPaused is returned by Trigger for a job that is paused, or while the
// whole cluster is.
var ErrPaused = engine.ErrPaused

// ErrNoJob is returned by Trigger for a job the configuration does not have.
var ErrNoJob = engine.ErrNoJob

// ErrSpecConflict is returned by Trigger and Backfill for a job whose spec
// in this configuration is not the spec in force in the store's catalog:
// this replica claims none of its slots (see the README's Guarantees, 8).
var ErrSpecConflict = engine.ErrSpecConflict

// ErrNoFreeSlot is returned by Trigger when every second of the next minute
// is one of the job's scheduled slots or another trigger's: try again later.
var ErrNoFreeSlot = engine.ErrNoFreeSlot

// RunEnd says how a run ended, as the runs_total metric counts it.
type RunEnd string

// How a run ends.
const (
	// EndSucceeded, EndFailed and EndTimedOut are the outcomes the job's
	// function gave: it returned nil, returned an error (or panicked), or
	// outlived its timeout.
	EndSucceeded RunEnd = RunEnd(engine.EndSucceeded)
	EndFailed    RunEnd = RunEnd(engine.EndFailed)
	EndTimedOut  RunEnd = RunEnd(engine.EndTimedOut)
	// EndLeaseLost: the replica lost the slot's lease during the run (the
	// job's context was cancelled), or could not record its outcome; the
	// slot belongs to whoever holds it now.
	EndLeaseLost RunEnd = RunEnd(engine.EndLeaseLost)
	// EndReleased: shutdown, or a cancelled Trigger, stopped the run and
	// handed its slot back; another replica takes it over at once.
	EndReleased RunEnd = RunEnd(engine.EndReleased)
	// EndReplaced: a slot claimed with overlap: replace superseded the run.
	EndReplaced RunEnd = RunEnd(engine.EndReplaced)
	// EndRetrying: the run failed and its slot waits for a retry.
	EndRetrying RunEnd = RunEnd(engine.EndRetrying)
)

// TriggerResult says what a manual trigger did.
type TriggerResult struct {
	Job   string
	Slot  time.Time // the manual slot: its run key is Job@Slot
	Fence int64
	End   RunEnd
}

// Trigger runs job now, on this replica, as a manual slot: a slot of its own
// (the current second, or the first one after it that is not one of the
// job's scheduled slots), claimed like any other so that it runs once and
// obeys the job's overlap policy, and recorded in history as manual. It
// returns when the run has ended; cancelling ctx hands the slot back, as a
// shutdown does. A forbid job that is running answers ErrBusy, a paused
// one ErrPaused, a job the configuration does not have ErrNoJob. Concurrent
// triggers of one job, on one replica or several, each get a slot of their
// own; ErrNoFreeSlot when a minute of seconds is taken.
//
// While Run runs, the trigger goes through its engine and its store, like
// the HTTP API's: the run is one of Run's, which waits for it at shutdown.
// Otherwise Trigger uses the store WithStore gave, or opens the configured
// one for this call alone. Triggers may be called concurrently, and
// repeatedly.
func (s *Scheduler) Trigger(ctx context.Context, job string) (TriggerResult, error) {
	m, end, err := s.eng.Trigger(ctx, job)
	var st slotstore.Store
	if errors.Is(err, engine.ErrNotRunning) || s.notRunning(err) {
		st = s.store
		if st == nil {
			opened, oerr := backend.OpenLogged(ctx, s.cfg.backendConfig(), s.log)
			if oerr != nil {
				return TriggerResult{Job: job}, oerr
			}
			defer opened.Close()
			st = opened
		}
		m, end, err = s.eng.TriggerOn(ctx, st, job) // reads a schedule held as data from st
	}
	res := TriggerResult{Job: m.Job, Slot: m.Slot, Fence: m.Fence, End: RunEnd(end)}
	if st = s.actStore(st); st != nil {
		s.record(ctx, st, triggerAct(job, res, err))
	}
	return res, err
}

// notRunning reports whether err is the engine's "no such job" while no
// Run is in progress: the job may be a schedule held as data, which only a
// Run follows, and which a trigger or backfill outside one reads from the
// store (engine.TriggerOn, BackfillOn).
func (s *Scheduler) notRunning(err error) bool {
	return errors.Is(err, engine.ErrNoJob) && s.runStore.Load() == nil
}
