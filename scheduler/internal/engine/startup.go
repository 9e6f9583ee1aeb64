// Start-up in the order the slots come due: the schedules held as data
// read in pages and put in the plan set as they come, and every job
// enrolled and scheduled a batch at a time, the soonest first, with the
// slots due so far claimed between batches. The first run waits for one
// page of schedules and one batch of enrolments, not for every job's.

package engine

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// startUp puts the schedules held as data in the plan set (loadSchedules)
// and enrolls and schedules every job, before the loop serves its heap.
// It reports false if ctx ended first.
func (l *loop) startUp(ctx context.Context) bool {
	s := startup{l: l}
	if l.s.follow == nil {
		return s.take(ctx, l.s.jobs().all()) && s.done(ctx)
	}
	return s.take(ctx, l.s.jobs().config()) && l.s.loadSchedules(ctx, l.st, s.take) && s.done(ctx)
}

// startup is what a start-up has done so far.
type startup struct {
	l               *loop
	jobs, conflicts int
	skips           []slotstore.SkipRequest // slots to record missed, sent as they fill a batch
}

// take enrolls plans, schedules each (schedule) and records the slots they
// missed: a batch of maxBatch at a time, those whose next slot comes due
// first before the others, and the slots due meanwhile claimed between
// batches (serveDue). A job is scheduled only once its enrolment has
// answered, so no claim precedes it. With no plans it claims what is due
// (between two pages of schedules read). It reports false if ctx ended
// first.
func (s *startup) take(ctx context.Context, plans []*plan) bool {
	l := s.l
	if len(plans) == 0 {
		l.serveDue(ctx)
		return ctx.Err() == nil
	}
	plans = byNextDue(plans, l.s.now())
	for len(plans) > 0 {
		part := plans[:min(len(plans), maxBatch)]
		plans = plans[len(part):]
		gens, ok := l.s.enroll(ctx, l.st, part)
		if !ok {
			return false
		}
		now := l.s.now()
		for _, p := range part {
			l.noteNew(p)
			if p.inConflict() {
				s.conflicts++
			}
			// After a long outage every job may have up to
			// maxMissedRecords of them.
			if s.skips = append(s.skips, l.schedule(p, now, gens[p.name])...); len(s.skips) >= maxBatch {
				l.skip(ctx, s.skips)
				s.skips = s.skips[:0]
			}
		}
		s.jobs += len(part)
		if ctx.Err() != nil {
			return false
		}
		l.serveDue(ctx)
	}
	return true
}

// done ends the start-up: every job is enrolled and scheduled.
func (s *startup) done(ctx context.Context) bool {
	// The store's catalog has every job's spec from here on: what a tool
	// waiting for this replica to count in the catalog waits for.
	s.l.s.log.Info("jobs enrolled", "jobs", s.jobs, "in_conflict", s.conflicts, "revision", s.l.s.jobs().revision)
	s.l.skip(ctx, s.skips)
	if ctx.Err() != nil {
		return false
	}
	s.l.s.metrics.startup.Set(time.Since(s.l.began).Seconds())
	return true
}

// serveDue claims the slots of the jobs scheduled so far that are due, as
// the loop does once it runs, and takes in the watches runs started
// meanwhile ask for (a run whose retry is due waits for its note to be
// taken). Reloads and scans wait for the loop: they change or look at jobs
// the start-up has not scheduled yet.
func (l *loop) serveDue(ctx context.Context) {
	for drained := false; !drained; {
		select {
		case n := <-l.watches:
			l.noteWatch(n)
		case r := <-l.pauses.reads:
			l.notePauses(r) // puts back the slots held for it
		default:
			drained = true
		}
	}
	if l.sleep(ctx) <= 0 {
		l.wake(ctx)
	}
}

// byNextDue returns plans ordered by when each's next slot comes due after
// now (jitter included), those with none last; the next slots are computed
// on every processor, as a start-up of 100,000 schedules has as many.
func byNextDue(plans []*plan, now time.Time) []*plan {
	type due struct {
		p  *plan
		at int64 // UnixNano; math.MaxInt64 for none
	}
	ds := make([]due, len(plans))
	workers := min(runtime.GOMAXPROCS(0), 1+len(plans)/1000)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(plans); i += workers {
				p := plans[i]
				ds[i] = due{p: p, at: math.MaxInt64}
				if next := p.sched.Next(now.Add(-p.jitter)); !next.IsZero() {
					ds[i].at = next.Add(p.jitter).UnixNano()
				}
			}
		})
	}
	wg.Wait()
	slices.SortStableFunc(ds, func(a, b due) int { return cmp.Compare(a.at, b.at) })
	out := make([]*plan, len(ds))
	for i, d := range ds {
		out[i] = d.p
	}
	return out
}

// loadSchedules reads every live schedule in pages and puts those this
// binary can run (planOf) in the plan set, handing them to took as they
// are in force: the first page that has any, then each time as many more
// as the set holds, so the sets copied add up to twice the schedules at
// most; after a page it does not hand on, took gets none (it claims what
// is due). It retries each read until the store answers or ctx ends, and
// reports whether it read them all and took returned true for each. A
// Reload waits for the start-up to end: it would hold reloading.
func (e *Engine) loadSchedules(ctx context.Context, st slotstore.Store, took func(context.Context, []*plan) bool) bool {
	var got []*plan
	stored := 0
	put := func() bool {
		repl := make(map[string]*plan, len(got))
		for _, p := range got {
			repl[p.name] = p
		}
		e.reloading.Lock()
		next, _, _ := e.jobs().withSchedules(repl)
		e.set.Store(next)
		e.reloading.Unlock()
		plans := got
		got = nil
		return took(ctx, plans)
	}
	var head slotstore.Changes
	ok := e.retried(ctx, "reading the head of the schedules' writes", func(ctx context.Context) (err error) {
		head, err = st.ScheduleChanges(ctx, slotstore.ChangesParams{After: math.MaxInt64, Limit: 1})
		return err
	})
	for after := ""; ok; {
		var es []slotstore.CatalogEntry
		ok = e.retried(ctx, fmt.Sprintf("reading the schedules after %q", after), func(ctx context.Context) (err error) {
			es, err = st.Schedules(ctx, slotstore.ScheduleParams{After: after, Limit: e.follow.page})
			return err
		})
		if !ok {
			break
		}
		stored += len(es)
		got = append(got, e.plansOf(e.jobs(), es)...)
		if len(es) < e.follow.page {
			break
		}
		after = es[len(es)-1].Job
		// The first schedules this replica runs at once, then as many
		// more as it holds; between, what comes due is claimed.
		if held := e.jobs().nHeld; len(got) > 0 && (held == 0 || len(got) >= max(e.follow.page, held)) {
			ok = put()
		} else {
			ok = took(ctx, nil)
		}
	}
	if !ok || !put() {
		return false
	}
	// A write after the head is read again from the feed.
	e.follow.cursor = head.Head
	e.log.Info("schedules loaded", "schedules", e.jobs().nHeld, "stored", stored, "seq", head.Head)
	return true
}

// retried calls read until it answers without error or ctx ends, each
// call bounded by a minute, logging each failure at WARN as what failed;
// it reports whether read answered.
func (e *Engine) retried(ctx context.Context, what string, read func(context.Context) error) bool {
	for tries := 1; ; tries++ {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := read(rctx)
		cancel()
		e.metrics.storeCall(err)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		e.log.Warn(what+" failed; retrying", "err", err, "try", tries)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff(tries)):
		}
	}
}
