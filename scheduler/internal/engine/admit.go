// Admission: the cap on the runs one replica has in flight (max_running).
// A due slot that finds no room waits, in the order slots came due, for
// runs to end; one whose starting window closes first, or that its job's
// next slot overtakes, is recorded missed as overloaded. Whatever the load,
// the replica holds at most max_running runs and one waiting slot per job.

package engine

import (
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// DefaultMaxRunning is the cap on runs in flight when the
	// configuration sets none.
	DefaultMaxRunning = 10000
	// reasonOverloaded is the reason of a slot that could not start for
	// want of room: its window closed, or its job's next slot came due,
	// while this replica ran max_running runs.
	reasonOverloaded = "missed: overloaded"
	// admitEvery is how often waiting slots are looked at while runs end
	// one by one (fewer than a batch's room at a time).
	admitEvery = 100 * time.Millisecond
	// lateEvery is how often the waiting slots are looked through for
	// windows that closed: a slot whose window closed is recorded up to
	// this much later, and the sweep costs a look at every job waiting.
	lateEvery = time.Second
	// calmAfter is how long no slot must have waited for an overload to
	// be over: a replica at its cap every second, or at the top of every
	// minute, is in one overload, logged once, not one a burst.
	calmAfter = time.Minute
)

// admission is the loop's record of the due slots waiting for room; only
// the loop goroutine touches it, but for waiting, which run goroutines read
// to tell the loop a run ended.
type admission struct {
	max int
	// queue holds the waiting entries, in the order they came due; those
	// taken from of since (superseded, dropped) are skipped when reached.
	queue []*entry
	// of is each job's waiting entry: a job waits with one slot at most.
	of map[string]*entry
	// waiting is set while queue holds an entry: a run that ends then
	// tells the loop on freed.
	waiting atomic.Bool
	freed   chan struct{}
	// looked is when the queue was last looked at for room, and swept
	// when it was last looked through for closed windows.
	looked, swept time.Time
	// burst counts the current overload, from its first waiting slot
	// until none has waited for calmAfter: it is logged once as it begins
	// and once as it ends. last is when a slot last had to wait.
	burst struct {
		since, last           time.Time
		waited, started, shed int
	}
}

func (a *admission) init(max int) {
	if max <= 0 {
		max = DefaultMaxRunning
	}
	a.max = max
	a.of = make(map[string]*entry)
	a.freed = make(chan struct{}, 1)
}

// room is how many more runs this replica may start.
func (l *loop) room() int { return l.adm.max - int(l.runs.active.Load()) }

// admitIn says how long the loop may sleep before it must look at the
// waiting slots: at once when a batch's room is free, every admitEvery
// while any wait (a run that ends wakes it sooner, on freed).
func (l *loop) admitIn() (time.Duration, bool) {
	a := &l.adm
	if len(a.of) == 0 {
		l.calm()
		return 0, false
	}
	if room := l.room(); room >= min(len(a.of), max(a.max/16, 1)) {
		return 0, true
	}
	return max(admitEvery-time.Since(a.looked), 0), true
}

// admit returns the entries of batch that may be claimed now, within the
// room left, and defers the rest: new slots (fire, retry) wait in the
// queue, behind those waiting already, and are taken in the order they
// came due as room frees; watches and queued slots are looked at again a
// moment later, as they would be after a failed claim. Slots that can no
// longer start are added to missed, recorded overloaded.
func (l *loop) admit(batch []*entry, missed []slotstore.SkipRequest) ([]*entry, []slotstore.SkipRequest) {
	a := &l.adm
	room := l.room()
	if len(a.of) == 0 && len(batch) <= room {
		return batch, missed // the common case: room for everything
	}
	now := l.s.now()
	out := batch[:0]
	for _, e := range batch {
		switch e.kind {
		case watch, queued:
			if room > 0 {
				out = append(out, e)
				room--
				continue
			}
			l.later(e, now)
		default:
			missed = l.wait(e, missed)
		}
	}
	a.looked = time.Now()
	for room > 0 && len(a.queue) > 0 {
		e := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		if a.of[e.p.name] != e {
			continue // overtaken by the job's next slot: recorded when it was
		}
		delete(a.of, e.p.name)
		switch {
		case e.p.retired.Load():
		case e.late(now):
			missed = l.shed(e, missed, false)
		default:
			out = append(out, e)
			a.burst.started++
			room--
		}
	}
	missed = l.shedLate(now, missed)
	if len(a.of) == 0 {
		a.waiting.Store(false)
		a.queue = nil
	}
	return out, missed
}

// wait queues e, a new slot with no room to be claimed; the job's slot
// waiting before it is recorded overloaded at once, as the job has moved
// on.
func (l *loop) wait(e *entry, missed []slotstore.SkipRequest) []slotstore.SkipRequest {
	a := &l.adm
	if old := a.of[e.p.name]; old != nil {
		missed = l.shed(old, missed, true)
	}
	a.burst.last = time.Now()
	if a.burst.since.IsZero() {
		a.burst.since = a.burst.last
		l.s.log.Warn("overloaded: no room to start due slots; they wait for running ones to end",
			"max_running", a.max, "running", l.runs.active.Load())
	}
	a.burst.waited++
	a.of[e.p.name] = e
	a.queue = append(a.queue, e)
	a.waiting.Store(true)
	return missed
}

// shed records e missed, overloaded. A slot its job's next slot overtook
// is recorded from its own instant by the store's clock, not when its window
// closes: the replica keeps one waiting slot per job, so its memory stays
// bounded, and the store still refuses a skip of a slot another replica
// claimed meanwhile.
func (l *loop) shed(e *entry, missed []slotstore.SkipRequest, overtaken bool) []slotstore.SkipRequest {
	l.adm.burst.shed++
	q := e.p.missedSkip(e.slot, reasonOverloaded)
	if overtaken && q.Reason == reasonOverloaded {
		q.NotBefore = e.slot
	}
	return append(missed, q)
}

// shedLate records overloaded the waiting slots whose windows have closed,
// looking through the queue at most every lateEvery.
func (l *loop) shedLate(now time.Time, missed []slotstore.SkipRequest) []slotstore.SkipRequest {
	a := &l.adm
	if time.Since(a.swept) < lateEvery {
		return missed
	}
	a.swept = time.Now()
	kept := a.queue[:0]
	for _, e := range a.queue {
		switch {
		case a.of[e.p.name] != e:
		case e.p.retired.Load():
			delete(a.of, e.p.name)
		case e.late(now):
			delete(a.of, e.p.name)
			missed = l.shed(e, missed, false)
		default:
			kept = append(kept, e)
		}
	}
	clear(a.queue[len(kept):])
	a.queue = kept
	return missed
}

// calm logs the end of an overload once no slot waits and none has for
// calmAfter.
func (l *loop) calm() {
	a := &l.adm
	if a.burst.since.IsZero() || len(a.of) > 0 || time.Since(a.burst.last) < calmAfter {
		return
	}
	b := a.burst
	l.s.log.Warn("overload over", "lasted", b.last.Sub(b.since).Round(time.Millisecond), "slots_waited", b.waited,
		"started", b.started, "missed", b.shed)
	a.burst.since, a.burst.waited, a.burst.started, a.burst.shed = time.Time{}, 0, 0, 0
}

// later looks at e, a watch or a queued slot with no room to be claimed,
// again a moment later.
func (l *loop) later(e *entry, now time.Time) {
	at := now.Add(min(e.p.lease/3, admitEvery))
	if e.kind == queued {
		e.at = at
		l.h.push(e) // still the job's waiting slot (queue.go)
		return
	}
	l.push(e, at)
}

// runEndedHere tells the loop, if slots wait for room, that a run ended.
func (l *loop) runEndedHere() {
	if l.adm.waiting.Load() {
		select {
		case l.adm.freed <- struct{}{}:
		default:
		}
	}
}
