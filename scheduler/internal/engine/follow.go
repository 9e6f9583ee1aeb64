// Following the schedules held as data: every schedule whose job this
// binary registers is loaded, in pages, before the loop schedules its jobs;
// then the store's feed of schedule writes (ScheduleChanges) is read every
// schedulePoll, at once when the store's watch tells of a write, and when a
// claim finds a schedule's spec replaced; every schedule is read again every
// fullReadEvery. Each batch of changes becomes one
// new plan set, handed to the loop as a reload's is: a new schedule takes
// its slots from its put on, a changed one switches at its next slot, a
// deleted one takes none, and their running slots finish.

package engine

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

const (
	// schedulePoll is how often a replica reads the feed of schedule writes
	// when no notice comes: the delay of a change on a store with no watch,
	// or one whose notice was lost.
	schedulePoll = 2 * time.Second
	// schedulePage is the page of Schedules and ScheduleChanges reads.
	schedulePage = 10000
	// maxApply bounds the changes one plan set takes in.
	maxApply = 100000
	// minRead is the least time between two reads of the feed that
	// notices of writes set off.
	minRead = 250 * time.Millisecond
	// fullReadEvery is how often a replica reads every schedule again, and
	// takes in what the feed did not bring: a write a Redis Cluster indexed
	// late, numbers a store that lost its last writes handed out again.
	fullReadEvery = 10 * time.Minute
)

// follower is the state of the schedules' following; the follower's
// goroutine alone uses cursor.
type follower struct {
	lookup func(string) (jobs.Func, bool)
	page   int   // the page of a start-up's reads of every schedule
	cursor int64 // the newest write taken in
	kick   chan struct{}
	mu     sync.Mutex
	stale  map[string]bool // schedules whose claims found another spec in force
	warned map[string]bool // what warnOnce reported
	parsed map[parseKey]*schedule.Schedule
	byFP   map[string]JobSpec // the job of a spec body, by its fingerprint
}

func newFollower(lookup func(string) (jobs.Func, bool)) *follower {
	return &follower{lookup: lookup, page: schedulePage, kick: make(chan struct{}, 1), stale: make(map[string]bool), warned: make(map[string]bool),
		parsed: make(map[parseKey]*schedule.Schedule), byFP: make(map[string]JobSpec)}
}

// parseKey is what a parsed schedule of a spec body depends on.
type parseKey struct{ spec, zone, start, end string }

// maxParsed bounds the follower's cache of parsed schedules.
const maxParsed = 10000

// jobOf is JobOf, with the parsed schedule of a spec, zone and bounds
// shared by the schedules that have them: 100,000 schedules of a few specs
// parse a few, and share their plans' schedule.
func (f *follower) jobOf(en slotstore.CatalogEntry, fn jobs.Func) (JobSpec, error) {
	f.mu.Lock()
	j, ok := f.byFP[en.InForce.Fingerprint] // the same body, of another schedule
	f.mu.Unlock()
	if ok && j.Run == en.Run {
		j.Name, j.Fn = en.Job, fn
		return j, nil
	}
	b, ok := ParseBody(en.InForce.Body)
	if !ok {
		return JobOf(en, fn)
	}
	k := parseKey{b.Schedule, b.Zone, b.Start, b.End}
	f.mu.Lock()
	sched := f.parsed[k]
	f.mu.Unlock()
	j, err := jobOfBody(en, b, fn, sched)
	if err != nil {
		return j, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.parsed) == maxParsed {
		clear(f.parsed)
	}
	f.parsed[k] = j.Schedule
	if len(f.byFP) == maxParsed {
		clear(f.byFP)
	}
	f.byFP[en.InForce.Fingerprint] = j
	return j, nil
}

// noteScheduleSpec acts on f, the spec in force of p, a schedule's plan:
// p claims nothing while f is another spec, and the follower reads the
// schedule at once.
func (e *Engine) noteScheduleSpec(p *plan, f slotstore.SpecRecord) {
	if f.Fingerprint == "" || f.Fingerprint == p.spec.Fingerprint {
		p.conflict.Store(nil)
		return
	}
	p.conflict.Store(&f)
	e.markStale(p.name)
}

// plansOf returns the plans of the schedules of page this replica runs
// (planOf), made on every processor: reading a spec body is most of a
// start-up's work at 100,000 schedules.
func (e *Engine) plansOf(set *planSet, page []slotstore.CatalogEntry) []*plan {
	workers := min(runtime.GOMAXPROCS(0), 1+len(page)/1000)
	parts := make([][]*plan, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(page); i += workers {
				if p := e.planOf(set, page[i]); p != nil {
					parts[w] = append(parts[w], p)
				}
			}
		})
	}
	wg.Wait()
	return slices.Concat(parts...)
}

// readAll reads the head of the feed of schedule writes, then every live
// schedule, in pages, each handed to page: a write after the head is read
// again from the feed.
func readAll(ctx context.Context, st slotstore.Store, page func([]slotstore.CatalogEntry)) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	head, err := st.ScheduleChanges(ctx, slotstore.ChangesParams{After: 1<<63 - 1, Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("schedules: read the head of their writes: %w", err)
	}
	for after := ""; ; {
		es, err := st.Schedules(ctx, slotstore.ScheduleParams{After: after, Limit: schedulePage})
		if err != nil {
			return 0, fmt.Errorf("schedules: read a page after %q: %w", after, err)
		}
		page(es)
		if len(es) < schedulePage {
			return head.Head, nil
		}
		after = es[len(es)-1].Job
	}
}

// planOf returns the plan of en, a schedule's entry, or nil when this
// replica does not run it: deleted, named like a job of the configuration,
// of a job this binary does not register, or with a spec this build cannot
// read. The last two are logged once a schedule.
func (e *Engine) planOf(set *planSet, en slotstore.CatalogEntry) *plan {
	if en.Deleted || en.Run == "" {
		return nil
	}
	if p := set.byName[en.Job]; p != nil && p.run == "" {
		e.warnOnce("shadowed "+en.Job, "schedule shares its name with a job of the configuration; not run here",
			"schedule", en.Job, "run", en.Run)
		return nil
	}
	fn, ok := e.follow.lookup(en.Run)
	if !ok {
		e.warnOnce("unregistered "+en.Run, "schedules of a job this binary does not register are not run here",
			"run", en.Run, "first", en.Job)
		return nil
	}
	j, err := e.follow.jobOf(en, fn)
	if err != nil {
		e.warnOnce("unreadable", "schedules this build cannot read are not run here; later ones are not logged",
			"first", en.Job, "err", err)
		return nil
	}
	p := newPlan(j, slotstore.Spec{Fingerprint: en.InForce.Fingerprint, Body: en.InForce.Body})
	p.from = en.InForce.Since
	return p
}

// warnOnce logs msg at WARN once for key (a reason, and the job or schedule
// it is about) while this replica lives: a store with 100,000 schedules of
// a job this binary does not run says so once, not 100,000 times.
func (e *Engine) warnOnce(key, msg string, args ...any) {
	e.follow.mu.Lock()
	seen := e.follow.warned[key]
	e.follow.warned[key] = true
	e.follow.mu.Unlock()
	if !seen {
		e.log.Warn(msg, args...)
	}
}

// followSchedules reads the feed of schedule writes until ctx ends.
func (e *Engine) followSchedules(ctx context.Context, st slotstore.Store) {
	var notices <-chan struct{}
	if w, ok := st.(slotstore.ScheduleWatcher); ok {
		notices = w.WatchSchedules(ctx)
	}
	t := time.NewTicker(schedulePoll)
	defer t.Stop()
	full := time.NewTicker(fullReadEvery)
	defer full.Stop()
	failing, last := false, time.Time{}
	for {
		read := e.readChanges
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-full.C:
			read = e.reloadSchedules
		case <-e.follow.kick:
		case _, ok := <-notices:
			if !ok {
				notices = nil
			}
			// Notices of a burst of writes are read at most every
			// minRead: each read may build a new set of every plan.
			if wait := minRead - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		err := read(ctx, st)
		e.metrics.storeCall(err)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			e.log.Warn("reading the schedules' changes failed; retrying", "err", err)
			failing = true
		case err == nil && failing:
			e.log.Info("reading the schedules' changes works again")
			failing = false
		}
	}
}

// takeIfSchedule takes job in (TakeSchedule) when the engine has no job of
// that name: a schedule held as data, which only a Run follows. The
// runs outside a Run (TriggerOn, BackfillOn) read it from the store so.
func (e *Engine) takeIfSchedule(ctx context.Context, st slotstore.Store, job string) error {
	if e.jobs().plan(job) != nil {
		return nil
	}
	return e.TakeSchedule(ctx, st, job)
}

// TakeSchedule adds schedule id, read from st, to the jobs of an engine
// with no Run in progress, so that TriggerOn and BackfillOn can run it (a
// command's trigger or backfill of a schedule held as data). With a Run in
// progress it changes nothing: the Run follows the schedules itself.
// ErrNoJob when st has no such live schedule this binary can run.
func (e *Engine) TakeSchedule(ctx context.Context, st slotstore.Store, id string) error {
	if e.follow == nil {
		return fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	if e.live.cur.Load() != nil {
		return nil
	}
	es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{id}, Limit: 1})
	if err != nil {
		return fmt.Errorf("schedules: read %s: %w", id, err)
	}
	e.reloading.Lock()
	defer e.reloading.Unlock()
	prev := e.jobs()
	var p *plan
	if len(es) == 1 {
		p = e.planOf(prev, es[0])
	}
	if p == nil {
		return fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	next, _, _ := prev.withSchedules(map[string]*plan{id: p})
	e.set.Store(next)
	return nil
}
