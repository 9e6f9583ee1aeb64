// The loop core: the timer loop's state and the one goroutine that owns it
// — it sleeps until the heap's next entry is due, wakes to claim what is
// due, takes what other goroutines hand it, and follows the clock when it
// is set.

package engine

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// maxSleep caps one wait of the loop, so a step of the wall clock is
// noticed within it rather than after the whole computed wait.
const maxSleep = time.Second

// slotKey identifies a slot within the loop.
type slotKey struct {
	job  string
	slot int64
}

// loop is the timer loop: a heap of what is due when, served by one
// goroutine, the one calling run. That goroutine alone owns the heap and
// every field here, with two exceptions: runs, the record of running slots
// that run goroutines, triggers and backfills share under its lock, and
// pauses.changes, which a pause made through this replica counts up. The loop
// waits on the store only for what a wake decides — its claims (claimAll),
// skips and adoptions, each call bounded by claimTimeout, and at most
// pauseWait for a read of the pauses its new slots need; reads of the
// pauses, scans and the records of the slots admission sheds run on
// goroutines of their own and hand their answers back on channels
// (pauses.reads, scans, rec.back), so every answer is acted on by the
// goroutine that owns the state it changes.
//
// Its parts, a file each: the core here (run, sleep, wake, receive, the
// clock); claim dispatch (claim.go); result handling (result.go); run
// starting (runs.go); the pause cache (pauses.go); the scanner (scan.go);
// start-up catch-up (catchup.go); admission (admit.go); skipped slots and
// their recorder (shedding.go).
type loop struct {
	s  *Engine
	st slotstore.Store
	// runCtx is the runs' context: it outlives run's by the shutdown grace.
	runCtx context.Context
	h      entryHeap
	// watched holds the slots with a watch entry in the heap, so a slot
	// found by a scan and by a claim is watched once.
	watched map[slotKey]bool
	// waiting holds, for each job with overlap queue, the entry of its slot
	// that waits for the job's running slot to end (queue.go).
	waiting map[string]*entry
	// watches carries to the loop goroutine the slots runs ask it to
	// watch: a retry a failed run scheduled, a slot whose lease a run lost.
	watches chan watchNote
	// scans carries to the loop goroutine the running and retrying markers
	// the scanner read.
	scans chan []slotstore.Marker
	// bg tracks the loop's own goroutines (scanner, reads of the pauses,
	// the recorder): run returns when they have, so none calls the store
	// after Run.
	bg sync.WaitGroup
	// clockAt and realAt are the scheduler's clock and the process's
	// monotonic clock when the loop last looked, to notice the former
	// being set.
	clockAt, realAt time.Time

	pauses pauseCache // what is paused (pauses.go)
	memo   claimMemo  // what earlier claims said (result.go)
	runs   runSet     // the runs started (runs.go)
	// gates are what the runs of claims won ahead of their slots wait
	// for, each opened at its instant (gates.go).
	gates gateSet
	adm   admission    // the slots waiting for room (admit.go)
	rec   shedRecorder // records the slots admission sheds (shedding.go)

	// began is when the Run began; started is closed once its start-up
	// has ended (startUp), or it never will: a Reload waits for it.
	began       time.Time
	started     chan struct{}
	startedOnce sync.Once
}

// watchNote asks the loop to watch a slot from at: a failed slot whose
// retry is due then (retry set), or a slot whose lease this replica lost,
// so it takes the slot over should its successor die too.
type watchNote struct {
	p        *plan
	slot, at time.Time
	retry    bool
	// ended says instead that a run of p's slot ended here: a slot of the
	// job that waits for it is claimed at once (queue.go).
	ended bool
}

// newLoop builds the loop of one Run: runCtx is its runs' context, and runs
// counts them for Run to wait for.
func newLoop(s *Engine, st slotstore.Store, runCtx context.Context, runs *sync.WaitGroup) *loop {
	l := &loop{s: s, st: st, runCtx: runCtx, watched: make(map[slotKey]bool), waiting: make(map[string]*entry),
		watches: make(chan watchNote, 64),
		scans:   make(chan []slotstore.Marker), memo: newClaimMemo(), began: time.Now(), started: make(chan struct{})}
	l.runs.init(runs, runHooks{retryAt: l.noteRetry})
	l.gates.init()
	l.adm.init(s.maxRunning)
	l.pauses.init(s.jobs().plans)
	return l
}

// run schedules every job and serves the heap until ctx ends.
func (l *loop) run(ctx context.Context) {
	// Before the start-up, which reads the pauses on goroutines of bg.
	defer l.bg.Wait()
	// Not one of the runs, for Run to wait for: a gate whose runs all
	// ended (a lease lost as they waited) would hold Run in its grace. It
	// opens the others in the grace, and ends with it, or with Run.
	l.gates.opening = true
	go openGates(l.gates.in, l.runCtx.Done())
	defer close(l.gates.in)
	ok := l.startUp(ctx)
	l.endStartUp()
	if !ok {
		return
	}
	l.startRecorder(ctx)
	defer close(l.rec.in) // before bg.Wait: the recorder drains it until closed
	l.bg.Go(func() { l.scanner(ctx) })
	if l.s.follow != nil {
		l.bg.Go(func() { l.s.followSchedules(ctx, l.st) })
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		l.followClock()
		wait := l.sleep(ctx)
		if wait <= 0 {
			// Behind: serve what waits on the channels first, so runs and
			// the scanner are never held up by a backlog of due slots.
			for l.receive(nil, nil) {
			}
			l.wake(ctx)
			continue
		}
		timer.Reset(wait)
		l.receive(ctx.Done(), timer.C)
	}
}

// endStartUp marks the start-up of l ended, or given up: a Reload may go
// on.
func (l *loop) endStartUp() { l.startedOnce.Do(func() { close(l.started) }) }

// minStep is the least jump of the scheduler's clock against the process's
// monotonic clock that the loop treats as the clock being set.
const minStep = time.Second

// followClock notices the scheduler's clock being set (by hand, or by NTP
// after a suspend), against the process's monotonic clock, and moves with
// it the entries that wait a span from when they were made: watches until a
// lease ends, claims until the store's clock reaches a slot, retries and
// lapses. Fire entries stay: a slot is due at its nominal time on the clock
// as it now reads. A clock set back thus idles through slots it passed
// already (another replica ran them, or, if this clock ran ahead, the store
// answered them "not due yet" and their claims wait, moved, for their time);
// a clock set forward finds the slots it jumped over late, and the store's
// clock judges them (guarantee 7).
func (l *loop) followClock() {
	now, real := l.s.now(), time.Now()
	prevNow, prevReal := l.clockAt, l.realAt
	l.clockAt, l.realAt = now, real
	if prevNow.IsZero() {
		return
	}
	step := now.Round(0).Sub(prevNow.Round(0)) - real.Sub(prevReal)
	if step.Abs() < minStep {
		return
	}
	l.s.log.Warn("clock set; moving the entries that wait a span", "step", step.Round(time.Millisecond))
	for _, e := range l.h {
		if e.kind != fire {
			e.at = e.at.Add(step)
		}
	}
	heap.Init(&l.h)
}

// receive acts on one message to the loop (a watch a run asks for, a scan,
// a read of the pauses) and reports whether there was one. Before a message
// that schedules entries from the clock it follows the clock: an entry made
// after the clock was set, but before the loop noticed, is not moved again. With a nil stop
// it takes only a message already waiting; otherwise it waits for one, for
// stop to be closed or for tick.
func (l *loop) receive(stop <-chan struct{}, tick <-chan time.Time) bool {
	select {
	case n := <-l.watches:
		l.followClock()
		l.noteWatch(n)
		return true
	case ms := <-l.scans:
		l.followClock()
		l.watchAll(ms)
		return true
	case r := <-l.pauses.reads:
		l.notePauses(r)
		return true
	case r := <-l.s.reloads:
		l.takeReload(r)
		return true
	case later := <-l.rec.back:
		l.followClock()
		l.followSkips(later)
		return true
	case <-l.adm.freed:
		return true // the loop looks at the slots waiting for room as it sleeps
	default:
		if stop == nil {
			return false
		}
	}
	select {
	case <-stop:
	case <-tick:
	case n := <-l.watches:
		l.followClock()
		l.noteWatch(n)
	case ms := <-l.scans:
		l.followClock()
		l.watchAll(ms)
	case r := <-l.pauses.reads:
		l.notePauses(r)
	case r := <-l.s.reloads:
		l.takeReload(r)
	case later := <-l.rec.back:
		l.followClock()
		l.followSkips(later)
	case <-l.adm.freed:
	}
	return true
}

// noteWatch watches a slot a run asks the loop to: from the moment its
// retry is due, like any slot another replica may take; a takeover has no
// window.
func (l *loop) noteWatch(n watchNote) {
	if n.p.retired.Load() {
		return // removed or changed by a reload: its slots are no longer this replica's to watch
	}
	if n.ended {
		l.runEnded(n.p)
		return
	}
	e := &entry{p: n.p, slot: n.slot, kind: watch}
	if n.retry {
		e.until = n.p.retryUntil(n.slot)
	}
	l.push(e, n.at)
}

// sleep says how long the loop may wait before its next wake. It sends the
// read of the pauses that the next new slots need, pauseLead before they
// are due.
//
// A due slot is waited for on the timer alone, which wakes the loop within
// about a millisecond of the instant asked (the runtime's poller waits in
// whole milliseconds). Waking 2 ms early and spinning on runtime.Gosched
// for the rest cut the median dispatch delay from 0.8 ms to 0.1 ms, but not
// its tail, which the host's load decides: over six runs of
// BenchmarkDispatchDelay on a shared 2-core machine, p99 was 1.9–20 ms on
// the timer and 0.7–168 ms with the spin, the two trading places, and the
// spin kept a processor busy.
func (l *loop) sleep(ctx context.Context) time.Duration {
	wait := l.untilDue(ctx)
	if d, ok := l.admitIn(); ok {
		wait = min(wait, d)
	}
	return wait
}

// untilDue is sleep but for the slots waiting for room (admit.go).
func (l *loop) untilDue(ctx context.Context) time.Duration {
	if len(l.h) == 0 {
		return maxSleep
	}
	top := l.h.peek()
	wait := top.at.Sub(l.s.now())
	if top.kind == fire || top.kind == retry {
		if now := time.Now(); l.pauses.wanted(now, now.Add(max(wait, 0))) {
			if wait > pauseLead {
				return min(wait-pauseLead, maxSleep)
			}
			l.readPauses(ctx)
		}
	}
	return min(max(wait, 0), maxSleep)
}

// wake pops every due entry and claims the slots still worth claiming in
// batches.
func (l *loop) wake(ctx context.Context) {
	now := l.s.now()
	var batch []*entry
	var missed []slotstore.SkipRequest
	replaced := false // a waiting slot of overlap queue was replaced
	for len(l.h) > 0 && !l.h.peek().at.After(now) {
		e := l.h.pop()
		if e.dropped {
			continue
		}
		if e.p.retired.Load() {
			delete(l.watched, slotKey{e.p.name, e.slot.Unix()})
			continue // a reload removed the job or changed its spec: its chain of entries ends
		}
		switch e.kind {
		case watch:
			delete(l.watched, slotKey{e.p.name, e.slot.Unix()})
			if !e.until.IsZero() && now.After(e.until) {
				l.s.log.Warn("retry dropped: its window closed", "job", e.p.name, "slot", e.slot.Format(time.RFC3339), "until", e.until.Format(time.RFC3339))
				l.s.metrics.missed.WithLabelValues(e.p.metricJob(), "retry window closed").Inc()
				continue
			}
		case lapse:
			missed = append(missed, e.p.missedSkip(e.slot, e.reason))
			continue
		}
		if e.kind == fire {
			l.fired(e, now)
			if e.p.overlap == policy.OverlapQueue {
				n := len(missed)
				if missed = l.replaceWaiting(e, missed); len(missed) > n {
					replaced = true
				}
			}
		}
		if e.p.inConflict() {
			continue // another spec is in force: its replicas claim the job's slots
		}
		if e.kind != watch && e.p.except != nil {
			if reason := e.p.excluded(e.slot); reason != "" {
				missed = append(missed, e.p.calendarSkip(e.slot, reason))
				continue
			}
		}
		if e.kind != watch && l.beforeRecord(e) {
			// Never the job's slot, and no claim can win it: history says
			// why rather than "data loss" (logged by skip).
			missed = append(missed, slotstore.SkipRequest{Job: e.p.name, Slot: e.slot, Reason: reasonNewJob, Retain: e.p.history,
				Spec: e.p.spec.Fingerprint})
			continue
		}
		if e.kind != watch && e.late(now) {
			if l.waiting[e.p.name] == e {
				delete(l.waiting, e.p.name)
			}
			// Logged and counted by the replica whose skip records it (skip).
			missed = append(missed, e.p.missedSkip(e.slot, e.lateReason()))
			continue
		}
		batch = append(batch, e)
	}
	if replaced {
		// A waiting slot popped before the job's next slot replaced it in
		// this same wake is recorded skipped, not claimed as well.
		batch = slices.DeleteFunc(batch, func(e *entry) bool { return e.dropped })
	}
	// A paused job's slot is recorded paused before it would wait for
	// room, and one that waited is looked at again as it leaves.
	batch = l.dropPaused(ctx, batch)
	batch, shed, waited := l.admit(batch, nil)
	if waited {
		batch = l.dropPaused(ctx, batch)
	}
	l.skip(ctx, missed)
	l.claimAll(ctx, batch)
	l.recordShed(ctx, shed) // last: with the recorder's queue full, the loop records them itself
}

// fired schedules the slot after e's, a fire entry due at now, or says its
// job has none left, and measures how late the timer woke.
func (l *loop) fired(e *entry, now time.Time) {
	if next := e.p.sched.Next(e.slot); !next.IsZero() {
		l.h.push(&entry{at: e.p.fireAt(next), p: e.p, slot: next, kind: fire})
		l.s.metrics.next(e.p, next)
	} else {
		l.noteEnded(e.p)
	}
	l.s.metrics.timerLag.Observe(now.Sub(e.at).Seconds())
	if lag := now.Sub(e.at); lag > time.Second {
		l.s.log.Debug("timer lag", "job", e.p.name, "lag", lag)
	}
}

// beforeRecord reports whether e's slot came due before the store began to
// record its job, at this replica's start-up: the slot catch-up looks at,
// or one the job's jitter delayed past the start-up, of a job the store has
// never seen. A claim of it would be refused and recorded as a loss of
// data (slotstore.Generation); it was the job's no more than a slot of
// last year.
func (l *loop) beforeRecord(e *entry) bool {
	if !e.slot.Before(l.memo.newFrom) {
		return false // covered whatever the job (the common case, without a look-up)
	}
	born, ok := l.memo.newJobs[e.p.name]
	// A job declared after_data_loss: run claims such a slot as any
	// other: the store cannot tell a new job from one whose record it
	// lost, and its claim is not refused (loss.go).
	return ok && !(slotstore.Generation{Born: born}).Covers(e.slot) && !e.p.afterLoss
}

// push schedules e at at; a watch of a slot already watched is dropped.
func (l *loop) push(e *entry, at time.Time) {
	e.at = at
	if e.kind == watch {
		k := slotKey{e.p.name, e.slot.Unix()}
		if l.watched[k] {
			return
		}
		l.watched[k] = true
	}
	l.h.push(e)
}
