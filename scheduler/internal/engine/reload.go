// Reload: the jobs of a new configuration taken in while Run goes on — new
// jobs enrolled and scheduled, removed jobs taking no new slot, changed
// jobs switching spec at their next slot, running slots left to finish.

package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// jobs returns the jobs of the configuration in force.
func (e *Engine) jobs() *planSet { return e.set.Load() }

// newPlanSet builds the plans of specs under revision, with prev's
// schedules held as data but those a job of specs shares a name with,
// which it also returns. A job of prev whose spec is unchanged keeps its
// plan, and with it its place in the heap and its state.
func newPlanSet(specs []JobSpec, revision int64, prev *planSet) (*planSet, []*plan) {
	plans := make([]*plan, len(specs))
	// Jobs of one spec (the many jobs of one schedule and policy) share its
	// body and fingerprint, a third of a plan's heap were each its own, and
	// it is made once: its JSON and its hash were half of New's time.
	shared := make(map[string]slotstore.Spec)
	made := make(map[bodyKey]slotstore.Spec)
	for i, j := range specs {
		k, keyed := bodyKeyOf(j)
		sp, ok := made[k]
		if !keyed || !ok {
			sp = SpecOf(j, revision)
			if s, ok := shared[sp.Fingerprint]; ok {
				sp.Fingerprint, sp.Body = s.Fingerprint, s.Body
			} else {
				shared[sp.Fingerprint] = sp
			}
			if keyed {
				made[k] = sp
			}
		}
		p := prev.kept(j.Name, sp)
		if p == nil {
			p = newPlan(j, sp)
		}
		plans[i] = p
	}
	return prev.withConfig(plans, revision)
}

// newPlan returns the plan of j under spec sp.
func newPlan(j JobSpec, sp slotstore.Spec) *plan {
	return &plan{name: j.Name, run: j.Run, fn: j.Fn, sched: j.Schedule, params: j.Params, lease: j.Lease,
		timeout: j.Timeout, onCrash: j.OnCrash, maxAtt: j.MaxAttempts, deadline: j.Deadline, catchUp: j.CatchUp,
		catchUpLimit: j.CatchUpLimit, history: j.History, jitter: j.Jitter, overlap: j.Overlap, retries: j.Retries,
		pauseAfter: j.PauseAfterFailures, deciding: make(chan struct{}, 1), spec: sp, except: j.Except,
		maxRuns: j.MaxRuns, afterLoss: j.AfterDataLoss == policy.AfterDataLossRun}
}

// kept returns the plan of job in s if its spec is sp, revision and all (the
// function too is the caller's, and may be a new one: a reload keeps the
// registered function of the running binary, so a plan is kept whole). A
// plan whose revision alone changes is replaced, so that its new revision
// is enrolled.
func (s *planSet) kept(job string, sp slotstore.Spec) *plan {
	if s == nil {
		return nil
	}
	if p := s.byName[job]; p != nil && p.spec.Fingerprint == sp.Fingerprint && p.spec.Revision == sp.Revision {
		return p
	}
	return nil
}

// Reloaded says what a reload changed, each list sorted.
type Reloaded struct {
	Added, Removed, Changed []string
}

// Empty reports whether the reload changed no job.
func (r Reloaded) Empty() bool { return len(r.Added)+len(r.Removed)+len(r.Changed) == 0 }

// reloadReq hands a new set to the loop, whose goroutine takes it in.
type reloadReq struct {
	set   *planSet
	fresh []*plan // the plans the set adds or changes, enrolled
	gone  []*plan // the plans of the set before that it no longer has
	done  chan struct{}
	// schedules marks a set that changes schedules held as data alone
	// (follow.go): their fresh plans take their slots from their write on.
	schedules bool
}

// Reload replaces the jobs with specs under revision. The jobs it adds or
// changes are enrolled first, with their specs, on st (the store of the Run
// in progress); if that fails, nothing changes and the error says why. A
// removed job takes no new slot, a changed one takes its slots under its new
// spec from its next slot on, and a running slot of either finishes as it
// would have. Without a Run in progress the new jobs are simply those the
// next Run schedules.
func (e *Engine) Reload(ctx context.Context, st slotstore.Store, specs []JobSpec, revision int64) (Reloaded, error) {
	// After the start-up, which puts the schedules held as data in the
	// plan set as it reads them, under reloading, and hands the loop
	// nothing until it ends.
	if l := e.live.cur.Load(); l != nil {
		select {
		case <-l.started:
		case <-ctx.Done():
			return Reloaded{}, fmt.Errorf("reload: waiting for the start-up to end: %w", ctx.Err())
		}
	}
	e.reloading.Lock()
	defer e.reloading.Unlock()
	prev := e.jobs()
	next, gone := newPlanSet(specs, revision, prev)
	var r Reloaded
	var fresh []*plan
	for _, p := range next.plans {
		switch old := prev.byName[p.name]; {
		case old == nil:
			r.Added = append(r.Added, p.name)
			fresh = append(fresh, p)
		case old != p:
			r.Changed = append(r.Changed, p.name)
			fresh = append(fresh, p)
			gone = append(gone, old)
		}
	}
	for _, p := range prev.plans {
		if next.byName[p.name] == nil {
			r.Removed = append(r.Removed, p.name)
			gone = append(gone, p)
		}
	}
	slices.Sort(r.Added)
	slices.Sort(r.Removed)
	slices.Sort(r.Changed)
	if e.live.cur.Load() == nil {
		e.set.Store(next)
		return r, nil
	}
	if len(fresh) > 0 {
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, ok := e.enroll(ectx, st, fresh)
		cancel()
		if !ok {
			return Reloaded{}, fmt.Errorf("reload: enrolling %d new or changed jobs: %w", len(fresh), context.Cause(ectx))
		}
	}
	req := reloadReq{set: next, fresh: fresh, gone: gone, done: make(chan struct{})}
	select {
	case e.reloads <- req:
	case <-ctx.Done():
		return Reloaded{}, fmt.Errorf("reload: %w", ctx.Err())
	}
	<-req.done
	e.markStale(r.Removed...) // a schedule a removed job shadowed runs again
	if err := e.retire(ctx, st, r.Removed, revision); err != nil {
		return r, err
	}
	return r, nil
}

// retire enrolls the retired spec of each job a reload removed, so the job
// takes no slot on the replicas that still have it either, and the sweep
// leaves it alone. The jobs are already removed here; a failure is
// reported, and the next reload that removes nothing new does not retry it.
func (e *Engine) retire(ctx context.Context, st slotstore.Store, jobs []string, revision int64) error {
	if len(jobs) == 0 {
		return nil
	}
	p := slotstore.EnrollParams{Jobs: jobs, Replica: e.replica, Specs: make([]slotstore.Spec, len(jobs))}
	for i := range jobs {
		p.Specs[i] = RetiredSpec(revision)
	}
	ctx, cancel := context.WithTimeout(ctx, maxStoreWait)
	defer cancel()
	gens, err := st.Enroll(ctx, p)
	if err != nil {
		return fmt.Errorf("reload: removed %s, but recording them retired in the catalog failed: %w", strings.Join(jobs, ", "), err)
	}
	for _, g := range gens {
		if g.Spec.Fingerprint != p.Specs[0].Fingerprint {
			e.log.Warn("removed job is still in force elsewhere: another spec of it is in force", "job", g.Job, "in_force", g.Spec.Fingerprint,
				"in_force_by", g.Spec.Replica)
		}
	}
	return nil
}

// takeReload puts req's set in force, on the loop goroutine: the plans it
// no longer has are retired, and each new or changed plan is scheduled from
// its next slot (no catch-up: the slots before belonged to the spec then).
func (l *loop) takeReload(req reloadReq) {
	defer close(req.done)
	for _, p := range req.gone {
		p.retired.Store(true)
		l.s.metrics.jobs.remove(p)
		if req.set.byName[p.name] == nil && p.run == "" {
			l.s.metrics.specConflict.DeleteLabelValues(p.name)
		}
	}
	l.s.set.Store(req.set)
	now := l.s.now()
	for _, p := range req.fresh {
		l.noteNew(p)
		if p.run == "" {
			conflict := 0.0 // the job's gauge, whatever the plan it replaces set
			if p.inConflict() {
				conflict = 1
			}
			l.s.metrics.specConflict.WithLabelValues(p.name).Set(conflict)
		}
		if next := p.sched.Next(p.firstFrom(now)); !next.IsZero() {
			l.h.push(&entry{at: p.fireAt(next), p: p, slot: next, kind: fire})
			l.s.metrics.next(p, next)
			l.s.metrics.scheduled(p, now)
		} else {
			l.noteEnded(p)
		}
	}
	if req.schedules {
		l.s.log.Debug("schedules changed", "schedules", req.set.nHeld, "fresh", len(req.fresh), "gone", len(req.gone))
		return
	}
	l.s.log.Info("configuration reloaded", "jobs", len(req.set.plans), "revision", req.set.revision)
}

// firstFrom is the instant after which p, a plan a reload or a schedule's
// write brought, takes its first slot: its next slot whose try is still
// ahead (no catch-up: the slots before belonged to the spec then), or for
// a schedule held as data, the first slot after its write that is not past
// its starting deadline, so that a slot due soon after a put is run even
// when the change reached this replica after it.
func (p *plan) firstFrom(now time.Time) time.Time {
	at := now.Add(-p.jitter)
	if p.from.IsZero() || !p.from.Before(at) {
		return at
	}
	return maxTime(p.from, now.Add(-p.deadline-p.jitter))
}

// noteNew notes in the loop's memo when the store began to record p's job,
// if its enrolment began it.
func (l *loop) noteNew(p *plan) {
	if !p.newSince.IsZero() {
		l.memo.newJobs[p.name] = p.newSince
		l.memo.newFrom = maxTime(l.memo.newFrom, slotstore.Generation{Born: p.newSince}.From())
	} else {
		delete(l.memo.newJobs, p.name)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
