package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// MaxBackfill bounds the slots one backfill may cover: a wider range is
// refused, so a mistyped date cannot start a year of runs.
const MaxBackfill = 1000

// BackfillParams select the slots of a backfill: the job's scheduled slots
// from From to To, both included.
type BackfillParams struct {
	From, To time.Time
	// DryRun plans and runs nothing.
	DryRun bool
}

// What a backfill does with a slot (BackfillSlot.Action).
const (
	// BackfillRun: the slot never ran (no marker, or recorded skipped):
	// the backfill claims it and, if it wins, runs it.
	BackfillRun = "run"
	// BackfillLeave: the slot has a marker the backfill leaves alone (it
	// ran, runs, waits for a retry, or may have run before the store lost
	// its data); State and Reason say which.
	BackfillLeave = "leave"
)

// BackfillSlot is one slot of a backfill.
type BackfillSlot struct {
	Slot   time.Time
	Action string
	// State and Reason are the slot's marker's when planned; State is
	// empty for a slot with no marker.
	State  slotstore.State
	Reason string
	// After a run: Fence and End are the claim's and how its run ended;
	// Err says why a slot to run was not run (another replica holds it,
	// the store refused it, the backfill was stopped).
	Fence int64
	End   End
	Err   string
}

// BackfillResult is a backfill's plan and, once run, what each slot did.
type BackfillResult struct {
	Job   string
	Slots []BackfillSlot
}

// ToRun counts the slots the plan runs.
func (r BackfillResult) ToRun() int {
	n := 0
	for _, s := range r.Slots {
		if s.Action == BackfillRun {
			n++
		}
	}
	return n
}

// ErrBackfillRange: the range of a backfill is empty, not yet due, or
// holds more than MaxBackfill slots.
var ErrBackfillRange = errors.New("scheduler: bad backfill range")

// PlanBackfill reads which of job's slots in p's range never ran, on st: a
// slot with no marker, or one recorded skipped (missed while no replica
// ran, a catch-up policy, overlap; not one skipped for data loss), is to
// run; every other slot is left alone.
func (e *Engine) PlanBackfill(ctx context.Context, st slotstore.Store, job string, p BackfillParams) (BackfillResult, error) {
	pl := e.jobs().plan(job)
	if pl == nil {
		return BackfillResult{}, fmt.Errorf("%w: %q", ErrNoJob, job)
	}
	out := BackfillResult{Job: job}
	now := e.now()
	from, to := p.From.Truncate(time.Second), p.To.Truncate(time.Second)
	// A slot whose starting window is still open on some replica is theirs
	// to run (or, with overlap forbid or replace, to skip): a backfill
	// claiming it could take it from them, early and without its jitter.
	closed := now.Add(-(pl.deadline + pl.jitter + time.Second)).Truncate(time.Second)
	if from.After(closed) {
		return out, fmt.Errorf("%w: from %s is too recent: the running replicas may still start %s's slots after %s (starting_deadline + jitter)",
			ErrBackfillRange, from.UTC().Format(time.RFC3339), job, closed.UTC().Format(time.RFC3339))
	}
	if to.After(closed) {
		to = closed
	}
	if to.Before(from) {
		return out, fmt.Errorf("%w: to %s is before from %s", ErrBackfillRange, to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	var slots []time.Time
	for s := pl.sched.Next(from.Add(-time.Second)); !s.IsZero() && !s.After(to); s = pl.sched.Next(s) {
		if len(slots) == MaxBackfill {
			return out, fmt.Errorf("%w: %s has more than %d slots from %s to %s; backfill a shorter range at a time",
				ErrBackfillRange, job, MaxBackfill, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		}
		slots = append(slots, s)
	}
	if len(slots) == 0 {
		return out, fmt.Errorf("%w: %s has no slot from %s to %s", ErrBackfillRange, job, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	markers, err := markersFrom(ctx, st, job, from, to)
	if err != nil {
		return out, err
	}
	// A slot older than the job's generation, with no marker, is one the
	// store cannot vouch for: a claim would record it skipped for data
	// loss. Say so now rather than plan to run it, and without naming a
	// loss: the slot may as well be from before the job was enrolled.
	gens, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{job}})
	if err != nil {
		return out, fmt.Errorf("backfill %s: enroll: %w", job, err)
	}
	// Markers are kept for the job's history: older, a slot with no marker
	// may have run and had its marker pruned, so it is left alone; the
	// store refuses it too (its retention has ended), by its own clock.
	// The margin (clockMargin, as catch-up's) covers the clocks of this
	// replica and the store, and leaves a slot won now that much history
	// at least. Raising history has the limit catch-up's has (owedFrom): a
	// slot older than the previous history may have run and had its marker
	// pruned, and is planned to run.
	kept := now.Add(-pl.history + clockMargin)
	for _, s := range slots {
		out.Slots = append(out.Slots, pl.backfillSlot(s, markers, gens[0], kept))
	}
	return out, nil
}

// backfillSlot plans slot s of pl: run it, or leave it and say why, given
// the job's markers by slot, its generation g, and kept, the oldest slot
// whose marker the store still keeps.
func (pl *plan) backfillSlot(s time.Time, markers map[int64]slotstore.Marker, g slotstore.Generation, kept time.Time) BackfillSlot {
	bs := BackfillSlot{Slot: s, Action: BackfillRun}
	if s.Before(kept) {
		bs.Action, bs.Reason = BackfillLeave, fmt.Sprintf("older than the job's history (%s): it may have run and its marker been deleted", pl.history)
		if m, ok := markers[s.Unix()]; ok {
			bs.State = m.State
		}
		return bs
	}
	if m, ok := markers[s.Unix()]; ok {
		bs.State, bs.Reason = m.State, m.Reason
		if m.State != slotstore.StateSkipped || m.Reason == slotstore.ReasonDataLoss || !g.Covers(m.ClaimedAt) || !g.Covers(s) {
			bs.Action = BackfillLeave
		}
	} else if !g.Covers(s) {
		bs.Action, bs.Reason = BackfillLeave, fmt.Sprintf("before the store began to record the job (%s): it cannot tell whether the slot ran",
			g.Born.UTC().Format(time.RFC3339))
	}
	if reason := pl.excluded(s); reason != "" && bs.Action == BackfillRun {
		bs.Action, bs.Reason = BackfillLeave, reason // a calendar skips it: never to run
	}
	return bs
}

// markersFrom reads job's markers of slots from from to to, by slot.
func markersFrom(ctx context.Context, st slotstore.Store, job string, from, to time.Time) (map[int64]slotstore.Marker, error) {
	const page = 1000
	out := make(map[int64]slotstore.Marker)
	before := to.Add(time.Second)
	for {
		ms, err := st.History(ctx, slotstore.HistoryParams{Job: job, Before: before, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("read the history of %s: %w", job, err)
		}
		for _, m := range ms {
			if m.Slot.Before(from) {
				return out, nil
			}
			out[m.Slot.Unix()] = m
		}
		if len(ms) < page {
			return out, nil
		}
		// Markers of the page's oldest slot beyond the page: a slot has
		// one marker, so the next page starts just before it.
		before = ms[len(ms)-1].Slot
	}
}

// claimWith calls do, which claims a slot with the store it is given and
// says whether it won; a claimWith that runs slots on the Run in progress
// answers ErrNotRunning once none is.
type claimWith func(ctx context.Context, do func(st slotstore.Store) (won bool, err error)) error

// runClaimed runs a won claim of a backfill and returns how it ended.
type runClaimed func(p *plan, c slotstore.Claim, sent time.Time) (End, error)

// backfill claims and runs, one after another, the slots plan marks to run,
// and records in plan what each did. It stops at the first slot it cannot
// run because ctx ended or run refuses (no Run in progress any more); the
// slots not reached keep an Err saying so.
func (e *Engine) backfill(ctx context.Context, plan *BackfillResult, claim claimWith, run runClaimed) {
	p := e.jobs().plan(plan.Job)
	overlap := policy.OverlapAllow
	if p.overlap != policy.OverlapAllow {
		// A backfilled slot never replaces the run of a later one.
		overlap = policy.OverlapForbid
	}
	stopped := ""
	for i := range plan.Slots {
		bs := &plan.Slots[i]
		if bs.Action != BackfillRun {
			continue
		}
		if stopped != "" {
			bs.Err = stopped
			continue
		}
		if err := ctx.Err(); err != nil {
			stopped = "not run: the backfill was stopped"
			bs.Err = stopped
			continue
		}
		var (
			c    slotstore.Claim
			sent time.Time
			won  bool
		)
		err := claim(ctx, func(st slotstore.Store) (bool, error) {
			sent = time.Now()
			cctx, cancel := context.WithTimeout(ctx, maxStoreWait)
			defer cancel()
			res, err := st.Claim(cctx, slotstore.ClaimParams{Replica: e.replica, Incarnation: e.incarnation, Requests: []slotstore.ClaimRequest{{
				Job: p.name, Slot: bs.Slot, Lease: p.lease, OnCrash: p.onCrash, MaxAttempts: p.maxAtt, Retain: p.history,
				Overlap: overlap, NotBefore: bs.Slot, Backfill: true, Spec: p.spec.Fingerprint,
			}}})
			if err != nil {
				return false, err
			}
			c, won, err = e.backfillAnswer(p, overlap, bs, res[0])
			return won, err
		})
		if errors.Is(err, ErrNotRunning) {
			stopped = "not run: the scheduler stopped"
			bs.Err = stopped
			continue
		}
		if err != nil {
			bs.Err = "not run: claim: " + err.Error()
			continue
		}
		if !won {
			continue
		}
		bs.Fence = c.Fence
		end, err := run(p, c, sent)
		bs.End = end
		if err != nil {
			bs.Err = err.Error()
		}
		e.log.Info("backfill ran a slot", "job", p.name, "slot", bs.Slot.UTC().Format(time.RFC3339), "fence", c.Fence, "end", end)
	}
}

// backfillAnswer acts on the store's answer r to the backfill claim of bs:
// the claim to run when it won, else why the slot is not run, in bs.Err.
func (e *Engine) backfillAnswer(p *plan, overlap policy.Overlap, bs *BackfillSlot, r slotstore.ClaimResult) (slotstore.Claim, bool, error) {
	switch {
	case r.Status == slotstore.Superseded:
		e.superseded(p)
		return slotstore.Claim{}, false, fmt.Errorf("%w: %s", ErrSpecConflict, p.name)
	case r.Status == slotstore.Won:
		return r.Claim, true, nil
	case r.Status == slotstore.Skipped && overlap == policy.OverlapForbid && r.Marker.State == slotstore.StateSkipped &&
		(r.Marker.Reason == bs.Reason || r.Marker.Reason == slotstore.ReasonOverlap && bs.State == ""):
		// Skipped as it was (a skipped slot the backfill would have won),
		// or newly skipped for overlap: a slot ran.
		bs.Err = fmt.Sprintf("not run: another slot of %s was running (overlap %s)", p.name, p.overlap)
	case r.Status == slotstore.Absent:
		bs.Err = "not run: its history has ended by the store's clock, so it may have run"
	default:
		bs.Err = fmt.Sprintf("not run: %s (%s)", r.Status, r.Marker.State)
		if r.Marker.Reason != "" {
			bs.Err += ": " + r.Marker.Reason
		}
	}
	return slotstore.Claim{}, false, nil
}

// BackfillOn plans a backfill of job on st and, unless p.DryRun, runs its
// slots one after another, outside any Run, waiting for each; cancelling
// ctx hands the running slot back and stops.
func (e *Engine) BackfillOn(ctx context.Context, st slotstore.Store, job string, p BackfillParams) (BackfillResult, error) {
	if err := e.takeIfSchedule(ctx, st, job); err != nil {
		return BackfillResult{Job: job}, err
	}
	bf, err := e.PlanBackfill(ctx, st, job, p)
	if err != nil || p.DryRun || bf.ToRun() == 0 {
		return bf, err
	}
	if err := e.backfillPaused(ctx, st, job); err != nil {
		return bf, err
	}
	direct := func(ctx context.Context, do func(st slotstore.Store) (bool, error)) error {
		_, err := do(st)
		return err
	}
	e.backfill(ctx, &bf, direct, func(p *plan, c slotstore.Claim, sent time.Time) (End, error) {
		rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		stop := context.AfterFunc(ctx, func() { cancel(ErrShutdown) })
		defer stop()
		return e.execute(rctx, cancel, st, p, c, backfilled, sent, begin{}, runHooks{}), nil
	})
	return bf, nil
}

// StartBackfill plans a backfill of job on the Run in progress and, unless
// p.DryRun, starts running its slots, one after another, on that Run: it
// returns the plan at once. The runs are the Run's, which waits for the one
// running when it shuts down; the slots not reached by then stay unrun, for
// a later backfill. How each slot ended is logged. ErrNotRunning when no
// Run is in progress.
func (e *Engine) StartBackfill(ctx context.Context, job string, p BackfillParams) (BackfillResult, error) {
	if e.jobs().plan(job) == nil {
		return BackfillResult{}, fmt.Errorf("%w: %q", ErrNoJob, job)
	}
	l := e.live.cur.Load()
	if l == nil {
		return BackfillResult{}, ErrNotRunning
	}
	plan, err := e.PlanBackfill(ctx, l.st, job, p)
	if err != nil || p.DryRun || plan.ToRun() == 0 {
		return plan, err
	}
	if err := e.backfillPaused(ctx, l.st, job); err != nil {
		return plan, err
	}
	work := plan
	work.Slots = slices.Clone(plan.Slots)
	// One of Run's runs, which Run waits for: counted under the lock Run
	// takes to stop taking runs, unless it has stopped already.
	e.live.mu.Lock()
	if e.live.cur.Load() != l {
		e.live.mu.Unlock()
		return plan, ErrNotRunning
	}
	l.runs.wg.Add(1)
	e.live.mu.Unlock()
	go func() {
		defer l.runs.wg.Done()
		// Bound to the Run, not to the request that started it.
		ctx := l.runCtx
		e.backfill(ctx, &work, e.onLive, e.runLive)
		ran, failed := 0, 0
		for _, s := range work.Slots {
			switch {
			case s.Action != BackfillRun:
			case s.End == EndSucceeded:
				ran++
			default:
				failed++
			}
		}
		e.log.Info("backfill done", "job", job, "from", p.From.UTC().Format(time.RFC3339), "to", work.Slots[len(work.Slots)-1].Slot.UTC().Format(time.RFC3339),
			"succeeded", ran, "not_succeeded", failed)
	}()
	return plan, nil
}

// onLive calls do with the store of the Run in progress, holding the lock
// Start holds, so that a claim won in do starts its run (runLive) before
// Run can stop taking runs; ErrNotRunning when no Run is in progress.
func (e *Engine) onLive(ctx context.Context, do func(st slotstore.Store) (bool, error)) error {
	e.live.mu.Lock()
	l := e.live.cur.Load()
	if l == nil {
		e.live.mu.Unlock()
		return ErrNotRunning
	}
	won, err := do(l.st)
	if !won || err != nil {
		e.live.mu.Unlock()
	}
	// Held after a win until runLive has started the run.
	return err
}

// runLive starts a claim won in onLive on the Run in progress, releases
// the lock onLive left held, and waits for the run to end.
func (e *Engine) runLive(p *plan, c slotstore.Claim, sent time.Time) (End, error) {
	l := e.live.cur.Load() // stable while mu is held
	done := make(chan End, 1)
	l.startWith(p, c, backfilled, sent, begin{}, done)
	e.live.mu.Unlock()
	return <-done, nil
}

// backfillPaused refuses a backfill of a paused job, as a trigger does.
func (e *Engine) backfillPaused(ctx context.Context, st slotstore.Store, job string) error {
	ps, err := st.Pauses(ctx)
	if err != nil {
		return fmt.Errorf("backfill %s: read pauses: %w", job, err)
	}
	if ps.All || slices.Contains(ps.Jobs, job) {
		return fmt.Errorf("%w: resume %s first", ErrPaused, job)
	}
	return nil
}

// Backfill plans a backfill of job on the Run in progress and, unless
// p.DryRun, runs its slots one after another on that Run, waiting for each;
// cancelling ctx hands the running slot back and stops. ErrNotRunning when
// no Run is in progress.
func (e *Engine) Backfill(ctx context.Context, job string, p BackfillParams) (BackfillResult, error) {
	if e.jobs().plan(job) == nil {
		return BackfillResult{}, fmt.Errorf("%w: %q", ErrNoJob, job)
	}
	l := e.live.cur.Load()
	if l == nil {
		return BackfillResult{}, ErrNotRunning
	}
	bf, err := e.PlanBackfill(ctx, l.st, job, p)
	if err != nil || p.DryRun || bf.ToRun() == 0 {
		return bf, err
	}
	if err := e.backfillPaused(ctx, l.st, job); err != nil {
		return bf, err
	}
	e.backfill(ctx, &bf, e.onLive, func(p *plan, c slotstore.Claim, sent time.Time) (End, error) {
		l := e.live.cur.Load() // stable while mu is held
		k := slotKey{p.name, c.Slot.Unix()}
		done := make(chan End, 1)
		l.startWith(p, c, backfilled, sent, begin{}, done)
		e.live.mu.Unlock()
		select {
		case end := <-done:
			return end, nil
		case <-ctx.Done():
			if cancel, ok := l.runs.running(k); ok {
				cancel(ErrShutdown)
			}
			return <-done, nil
		}
	})
	return bf, nil
}
