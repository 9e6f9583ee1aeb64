package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// ErrBusy is returned by Trigger for a job with overlap: forbid while one of
// its slots is running somewhere.
var ErrBusy = errors.New("scheduler: busy")

// ErrPaused is returned by Trigger for a job that is paused, or while the
// whole cluster is.
var ErrPaused = errors.New("scheduler: paused")

// TriggerResult says what a manual trigger did.
type TriggerResult struct {
	Job   string
	Slot  time.Time // the manual slot: its run key is Job@Slot
	Fence int64
	End   string // succeeded, failed, timeout, lease_lost, ...
}

// Trigger runs job now, on this replica, as a manual slot: a slot of its own
// (the current second, or the first one after it that is not one of the
// job's scheduled slots), claimed like any other so that it runs once and
// obeys the job's overlap policy, and recorded in history as manual. It
// returns when the run has ended; cancelling ctx hands the slot back, as a
// shutdown does. A forbid job that is running answers ErrBusy, a paused
// one ErrPaused, a job the configuration does not have ErrNoJob.
//
// While Run runs, the trigger goes through its engine and its store, like
// the HTTP API's: the run is one of Run's, which waits for it at shutdown.
// Otherwise Trigger uses the store WithStore gave, or opens the configured
// one for this call alone. Triggers may be called concurrently, and
// repeatedly.
func (s *Scheduler) Trigger(ctx context.Context, job string) (TriggerResult, error) {
	p := s.plan(job)
	if p == nil {
		return TriggerResult{}, fmt.Errorf("%w: %q", ErrNoJob, job)
	}
	out, started, err := s.live.trigger(ctx, s, p)
	if started || err != nil {
		return out, err
	}
	st := s.givenStore()
	if st == nil {
		opened, err := openStore(ctx, s.cfg.Store)
		if err != nil {
			return TriggerResult{}, err
		}
		defer opened.Close()
		st = opened
	}
	out, c, sent, err := s.claimManual(ctx, st, p)
	if err != nil {
		return out, err
	}
	// An interrupted trigger hands its slot back, as a shutdown does.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(errShutdown) })
	defer stop()
	out.End = string(s.execute(rctx, cancel, st, p, c, sent, runHooks{}))
	return out, nil
}

// ErrNoJob is returned by Trigger for a job the configuration does not have.
var ErrNoJob = errors.New("scheduler: no such job")

// liveEngine is the engine of a Run in progress, if any: Trigger starts its
// run there, so that Run's store is used and not closed, and Run waits for
// the run when it shuts down.
type liveEngine struct {
	mu sync.Mutex
	l  *loop
}

func (e *liveEngine) set(l *loop) {
	e.mu.Lock()
	e.l = l
	e.mu.Unlock()
}

// manualRun is a manual slot's run started on the live engine.
type manualRun struct {
	out  TriggerResult
	l    *loop
	key  slotKey
	done <-chan runEnd // how the run ended
}

// start claims a manual slot of p and starts its run on the live engine;
// started is false when no Run is in progress (or it is shutting down). The
// lock is held until the run has started, so Run, ending, either waits for
// the run or has stopped taking triggers before the claim.
func (e *liveEngine) start(ctx context.Context, s *Scheduler, p *plan) (m manualRun, started bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.l == nil {
		return manualRun{}, false, nil
	}
	// Bounded: Run, ending, waits for the lock.
	cctx, cancel := context.WithTimeout(ctx, maxStoreWait)
	defer cancel()
	out, c, sent, err := s.claimManual(cctx, s.store, p)
	if err != nil {
		return manualRun{out: out}, true, err
	}
	done := make(chan runEnd, 1)
	e.l.startWith(p, c, sent, done)
	return manualRun{out: out, l: e.l, key: slotKey{p.name, c.Slot.Unix()}, done: done}, true, nil
}

// trigger runs a manual slot of p on the live engine, as start does, and
// waits for the run to end; cancelling ctx hands the slot back.
func (e *liveEngine) trigger(ctx context.Context, s *Scheduler, p *plan) (TriggerResult, bool, error) {
	m, started, err := e.start(ctx, s, p)
	if !started || err != nil {
		return m.out, started, err
	}
	select {
	case end := <-m.done:
		m.out.End = string(end)
	case <-ctx.Done():
		if cancel, ok := m.l.running(m.key); ok {
			cancel(errShutdown)
		}
		m.out.End = string(<-m.done)
	}
	return m.out, true, nil
}

// givenStore is the store WithStore gave, or nil; never one a Run opened
// (that one is Run's, and goes through the live engine).
func (s *Scheduler) givenStore() slotstore.Store {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	if s.ownsStore {
		return nil
	}
	return s.store
}

func (s *Scheduler) plan(job string) *plan { return s.byName[job] }

// claimManual claims a manual slot of p; it returns the claim to run, or
// ErrBusy, or why the slot could not be won.
func (s *Scheduler) claimManual(ctx context.Context, st slotstore.Store, p *plan) (TriggerResult, slotstore.Claim, time.Time, error) {
	job := p.name
	ps, err := st.Pauses(ctx)
	if err != nil {
		return TriggerResult{Job: job}, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger %s: read pauses: %w", job, err)
	}
	if ps.All || slices.Contains(ps.Jobs, job) {
		return TriggerResult{Job: job}, slotstore.Claim{}, time.Time{}, fmt.Errorf("%w: resume %s first", ErrPaused, job)
	}
	// The current second, or the next free one: not a scheduled slot of the
	// job, and not one another trigger took a moment ago.
	free := func(t time.Time) time.Time {
		for i := 0; i < 60 && p.sched.Prev(t).Equal(t); i++ {
			t = t.Add(time.Second)
		}
		return t
	}
	// A slot from before the job's generation would be skipped (the store
	// cannot tell whether it ran before it lost its data): start after it.
	gens, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{job}})
	if err != nil {
		return TriggerResult{Job: job}, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger %s: enroll: %w", job, err)
	}
	first := s.now().Truncate(time.Second)
	if len(gens) == 1 && slotstore.BeforeGeneration(first, gens[0].Born) {
		first = gens[0].Born.Truncate(time.Second).Add(time.Second)
	}
	slot := free(first)
	out := TriggerResult{Job: job}
	for tries := 0; ; tries++ {
		out.Slot = slot
		if p.sched.Prev(slot).Equal(slot) {
			return out, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger: %s is scheduled every second of the next minute; no slot is free for a manual run", job)
		}
		sent := time.Now()
		res, err := st.Claim(ctx, slotstore.ClaimParams{Replica: s.replica, Incarnation: s.incarnation, Requests: []slotstore.ClaimRequest{{
			Job: p.name, Slot: slot, Lease: p.lease, OnCrash: p.onCrash, MaxAttempts: p.maxAtt, Retain: p.history,
			Overlap: slotstore.Overlap(p.overlap), Manual: true,
		}}})
		if err != nil {
			return out, slotstore.Claim{}, sent, fmt.Errorf("trigger %s: claim: %w", job, err)
		}
		r := res[0]
		switch {
		case r.Status == slotstore.Won:
			for _, ref := range r.Replaced {
				s.log.Info("run replaced", "job", ref.Job, "slot", ref.Slot.UTC().Format(time.RFC3339), "fence", ref.Fence, "by", "manual trigger")
			}
			out.Fence = r.Claim.Fence
			return out, r.Claim, sent, nil
		case r.Status == slotstore.Skipped && r.Marker.Reason == slotstore.ReasonOverlap && r.Marker.Holder == s.replica &&
			r.Marker.Manual:
			return out, slotstore.Claim{}, sent, fmt.Errorf("%w: %s is running and its overlap is forbid", ErrBusy, job)
		case tries < 5:
			slot = free(slot.Add(time.Second)) // taken by another trigger this second
		default:
			return out, slotstore.Claim{}, sent, fmt.Errorf("trigger %s: slot %s is %s", job, slot.Format(time.RFC3339), r.Status)
		}
	}
}
