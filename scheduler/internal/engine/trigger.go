package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// End says how a run ended, as runs_total counts it.
type End string

// The ends of a run.
const (
	EndSucceeded End = End(slotstore.Succeeded)
	EndFailed    End = End(slotstore.Failed)
	EndTimedOut  End = End(slotstore.TimedOut)
	// EndLeaseLost: the claim passed to another replica, or the outcome
	// could not be recorded; nothing of the run is in the store.
	EndLeaseLost End = "lease_lost"
	// EndReleased: the run was stopped by a shutdown (or a cancelled
	// trigger) and its slot handed back for another replica to take over.
	EndReleased End = "released"
	// EndReplaced: a claim of a later slot with overlap replace superseded
	// the run.
	EndReplaced End = "replaced"
	// EndRetrying: the run failed and its slot waits for a retry.
	EndRetrying End = "retrying"
)

// Manual is a manual slot: the claim a trigger won.
type Manual struct {
	Job   string
	Slot  time.Time // its run key is Job@Slot
	Fence int64
}

// liveEngine is the loop of a Run in progress, if any: triggers start their
// runs there, so that Run's store is used and not closed, and Run waits for
// the runs when it shuts down. Starting a run holds mu, for as long as its
// claim takes; readers (the store for the admin API's reads, a pause made
// through this replica) load cur and never wait for a claim.
type liveEngine struct {
	mu  sync.Mutex // held by set, and by Start from its claim to its run's start
	cur atomic.Pointer[loop]
}

func (e *liveEngine) set(l *loop) {
	e.mu.Lock()
	e.cur.Store(l)
	e.mu.Unlock()
}

// Started is a manual run started on the live engine.
type Started struct {
	Manual
	l    *loop
	key  slotKey
	done <-chan End // how the run ended
}

// Start claims a manual slot of job and starts its run on the Run in
// progress, like a scheduled one; it returns once the run has started.
// ErrNotRunning when no Run is in progress (or it is shutting down). The
// lock is held until the run has started, so Run, ending, either waits for
// the run or has stopped taking triggers before the claim.
func (e *Engine) Start(ctx context.Context, job string) (Started, error) {
	p := e.jobs().plan(job)
	if p == nil {
		return Started{}, fmt.Errorf("%w: %q", ErrNoJob, job)
	}
	e.live.mu.Lock()
	defer e.live.mu.Unlock()
	l := e.live.cur.Load() // stable while mu is held
	if l == nil {
		return Started{}, ErrNotRunning
	}
	// Bounded: Run, ending, waits for the lock.
	cctx, cancel := context.WithTimeout(ctx, maxStoreWait)
	defer cancel()
	m, c, sent, err := e.claimManual(cctx, l.st, p)
	if err != nil {
		return Started{Manual: m}, err
	}
	done := make(chan End, 1)
	l.startWith(p, c, triggered, sent, begin{}, done)
	return Started{Manual: m, l: l, key: slotKey{p.name, c.Slot.Unix()}, done: done}, nil
}

// Trigger runs a manual slot of job on the Run in progress, as Start does,
// and waits for the run to end; cancelling ctx hands the slot back.
// ErrNotRunning when no Run is in progress.
func (e *Engine) Trigger(ctx context.Context, job string) (Manual, End, error) {
	m, err := e.Start(ctx, job)
	if err != nil {
		return m.Manual, "", err
	}
	var end End
	select {
	case end = <-m.done:
	case <-ctx.Done():
		if cancel, ok := m.l.runs.running(m.key); ok {
			cancel(ErrShutdown)
		}
		end = <-m.done
	}
	return m.Manual, End(end), nil
}

// TriggerOn runs a manual slot of job on st, outside any Run, and waits for
// the run to end; cancelling ctx hands the slot back.
func (e *Engine) TriggerOn(ctx context.Context, st slotstore.Store, job string) (Manual, End, error) {
	if err := e.takeIfSchedule(ctx, st, job); err != nil {
		return Manual{}, "", err
	}
	p := e.jobs().plan(job)
	if p == nil {
		return Manual{}, "", fmt.Errorf("%w: %q", ErrNoJob, job)
	}
	m, c, sent, err := e.claimManual(ctx, st, p)
	if err != nil {
		return m, "", err
	}
	// An interrupted trigger hands its slot back, as a shutdown does.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(ErrShutdown) })
	defer stop()
	return m, End(e.execute(rctx, cancel, st, p, c, triggered, sent, begin{}, runHooks{})), nil
}

// maxManualTries bounds the slots one trigger tries: a minute of seconds,
// enough for as many triggers of one job at once.
const maxManualTries = 60

// claimManual claims a manual slot of p: the current second, or the first
// one after it that is not one of the job's scheduled slots. It returns the
// claim to run, or ErrBusy, ErrPaused, or why the slot could not be won.
func (e *Engine) claimManual(ctx context.Context, st slotstore.Store, p *plan) (Manual, slotstore.Claim, time.Time, error) {
	job := p.name
	out := Manual{Job: job}
	ps, err := st.Pauses(ctx)
	if err != nil {
		return out, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger %s: read pauses: %w", job, err)
	}
	if ps.All || slices.Contains(ps.Jobs, job) {
		return out, slotstore.Claim{}, time.Time{}, fmt.Errorf("%w: resume %s first", ErrPaused, job)
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
		return out, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger %s: enroll: %w", job, err)
	}
	first := e.now().Truncate(time.Second)
	if len(gens) == 1 && !gens[0].Covers(first) {
		first = gens[0].From().Add(time.Second - time.Nanosecond).Truncate(time.Second)
	}
	slot := free(first)
	for tries := 0; ; tries++ {
		out.Slot = slot
		if p.sched.Prev(slot).Equal(slot) {
			return out, slotstore.Claim{}, time.Time{}, fmt.Errorf("%w: %s is scheduled every second of the next minute", ErrNoFreeSlot, job)
		}
		sent := time.Now()
		res, err := st.Claim(ctx, slotstore.ClaimParams{Replica: e.replica, Incarnation: e.incarnation, Requests: []slotstore.ClaimRequest{{
			Job: p.name, Slot: slot, Lease: p.lease, OnCrash: p.onCrash, MaxAttempts: p.maxAtt, Retain: p.history,
			Overlap: triggerOverlap(p.overlap), Manual: true, Spec: p.spec.Fingerprint, RunsAfterDataLoss: p.afterLoss,
		}}})
		if err != nil {
			return out, slotstore.Claim{}, sent, fmt.Errorf("trigger %s: claim: %w", job, err)
		}
		r := res[0]
		switch {
		case r.Status == slotstore.Superseded:
			e.superseded(p)
			return out, slotstore.Claim{}, sent, fmt.Errorf("%w: %s", ErrSpecConflict, job)
		case r.Status == slotstore.Won:
			for _, ref := range r.Replaced {
				e.log.Info("run replaced", "job", ref.Job, "slot", ref.Slot.UTC().Format(time.RFC3339), "fence", ref.Fence, "by", "manual trigger")
			}
			out.Fence = r.Claim.Fence
			return out, r.Claim, sent, nil
		case r.Status == slotstore.Skipped && r.Marker.Reason == slotstore.ReasonOverlap && r.Marker.Holder == e.replica &&
			r.Marker.Manual:
			return out, slotstore.Claim{}, sent, fmt.Errorf("%w: %s is running and its overlap is forbid", ErrBusy, job)
		case tries < maxManualTries:
			// Taken by another trigger (of this replica or another): each
			// trigger gets a slot of its own, the next free second.
			slot = free(slot.Add(time.Second))
		default:
			return out, slotstore.Claim{}, sent, fmt.Errorf("%w: %s's slots up to %s are taken by other triggers", ErrNoFreeSlot, job, slot.Format(time.RFC3339))
		}
	}
}
