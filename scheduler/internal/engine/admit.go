// Admission: the cap on the runs one replica has in flight (max_running).
// A due slot that finds no room waits, in the order slots came due, for
// runs to end, and starts if its window is still open. One whose window
// closes first is recorded missed as overloaded; so is one that its job's
// next slot overtakes, once its window has closed by the store's clock,
// if no replica with room has claimed it by then. Whatever the load, the
// replica holds at most max_running runs, one waiting fire entry per job,
// and a few words for each overtaken slot still inside its window.

package engine

import (
	"container/heap"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// DefaultMaxRunning is the cap on runs in flight when the
	// configuration sets none.
	DefaultMaxRunning = 10000
	// reasonOverloaded is the reason of a slot that could not start for
	// want of room: its window closed while this replica ran max_running
	// runs and no other replica claimed it.
	reasonOverloaded = "missed: overloaded"
	// admitEvery is how often waiting slots are looked at while runs end
	// one by one (fewer than a batch's room at a time).
	admitEvery = 100 * time.Millisecond
	// lateEvery is how often the waiting slots are looked through for
	// windows that closed: such a slot is recorded up to this much later,
	// and the sweep costs a look at each. Overtaken slots are looked at as
	// their windows close (owedSlots).
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
	// queue holds the waiting entries, in the order they came due; an
	// entry overtaken since (dropped) is passed over when reached. n counts
	// the others.
	queue []*entry
	n     int
	// of is each job's waiting fire entry, which the job's next fire
	// entry overtakes: under a lasting overload a job waits with one slot
	// of its schedule, whatever the load. Retries and catch-up slots
	// (retry entries, bounded by the job's window and catch_up_limit) are
	// never overtaken, but for slots of the schedule held back while the
	// pauses were read (entry.held).
	of map[string]*entry
	// owed are the overtaken slots, recorded missed once their windows
	// close unless a replica with room claims them first.
	owed owedSlots
	// waiting is set while the queue holds an entry: a run that ends then
	// tells the loop on freed.
	waiting atomic.Bool
	freed   chan struct{}
	// looked is when the queue was last looked at for room, and swept
	// when it and owed were last looked through for closed windows.
	looked, swept time.Time
	// burst counts the current overload, from its first waiting slot
	// until none has waited for calmAfter: it is logged once as it begins
	// and once as it ends. last is when a slot last had to wait.
	burst struct {
		since, last           time.Time
		waited, started, shed int
	}
}

// owedSlot is a slot its job's next slot overtook while it waited for
// room: a plan and a slot (Unix seconds), 16 bytes for as long as its
// window is open — at most the jobs times their windows over their
// intervals, 6M and 96 MB for 100k every-second jobs with a minute's.
type owedSlot struct {
	p    *plan
	slot int64
}

// owedSlots holds the overtaken slots by the second their windows close
// (slot + starting deadline, rounded up to a whole second), so a look for
// closed windows touches the closed ones only: under a lasting overload
// millions are owed and tens of thousands close each second.
type owedSlots struct {
	by   map[int64][]owedSlot
	secs minHeap[int64] // the seconds of by, earliest first
	n    int
}

// add owes p's slot a record once its window has closed.
func (o *owedSlots) add(p *plan, slot time.Time) {
	closes := slot.Add(p.deadline)
	sec := closes.Unix()
	if closes.After(time.Unix(sec, 0)) {
		sec++
	}
	b, ok := o.by[sec]
	if !ok {
		heap.Push(&o.secs, sec)
	}
	o.by[sec] = append(b, owedSlot{p: p, slot: slot.Unix()})
	o.n++
}

// closed returns, and forgets, the slots of the earliest second at or
// before now, whose windows have closed, or nil when there are none. A
// window that closes on a whole second is closed from that instant, as the
// store judges a skip's NotBefore.
func (o *owedSlots) closed(now time.Time) []owedSlot {
	if o.secs.Len() == 0 || now.Before(time.Unix(o.secs.items[0], 0)) {
		return nil
	}
	sec := heap.Pop(&o.secs).(int64)
	b := o.by[sec]
	delete(o.by, sec)
	o.n -= len(b)
	return b
}

func (a *admission) init(max int) {
	if max <= 0 {
		max = DefaultMaxRunning
	}
	a.max = max
	a.of = make(map[string]*entry)
	a.owed.by = make(map[int64][]owedSlot)
	a.owed.secs.before = func(x, y int64) bool { return x < y }
	a.freed = make(chan struct{}, 1)
}

// room is how many more runs this replica may start.
func (l *loop) room() int { return l.adm.max - int(l.runs.active.Load()) }

// admitIn says how long the loop may sleep before it must look at the
// waiting slots: at once when a batch's room is free, every admitEvery
// while any wait (a run that ends wakes it sooner, on freed), and, while
// overtaken slots wait for their windows to close, as the first closes.
func (l *loop) admitIn() (time.Duration, bool) {
	a := &l.adm
	if a.n == 0 {
		if a.owed.n > 0 {
			return max(time.Unix(a.owed.secs.items[0], 0).Sub(l.s.now()), 0), true
		}
		l.calm()
		return 0, false
	}
	if room := l.room(); room >= min(a.n, max(a.max/16, 1)) {
		return 0, true
	}
	return max(admitEvery-time.Since(a.looked), 0), true
}

// admit returns the entries of batch that may be claimed now, within the
// room left, and defers the rest: new slots (fire, retry) wait in the
// queue, behind those waiting already, and are taken in the order they
// came due as room frees; takeovers and queued slots are looked at again a
// moment later, as after a failed claim. Retries of failed runs are never
// held back: their slot was admitted once, and a retry that found no room
// would leave it retrying for good. Slots that can no longer start, and
// overtaken ones whose windows closed, are added to missed; waited says
// that some returned waited for room, and may have been paused since.
func (l *loop) admit(batch []*entry, missed []slotstore.SkipRequest) (_ []*entry, _ []slotstore.SkipRequest, waited bool) {
	a := &l.adm
	room := l.room()
	if a.n == 0 && a.owed.n == 0 && len(batch) <= room {
		return batch, missed, false // the common case: room for everything
	}
	now := l.s.now()
	out := batch[:0]
	for _, e := range batch {
		switch {
		case e.kind == watch && !e.until.IsZero():
			out = append(out, e) // a failed run's retry
			room--
		case e.kind == watch || e.kind == queued:
			if room > 0 {
				out = append(out, e)
				room--
				continue
			}
			l.later(e, now)
		case a.n == 0 && room > 0:
			// None waits before it: claimed now, as another slot of its
			// job in this batch may be too (a catch-up's).
			out = append(out, e)
			room--
		default:
			l.wait(e)
		}
	}
	a.looked = time.Now()
	for room > 0 && len(a.queue) > 0 {
		e := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		if e.dropped {
			continue // overtaken, and owed
		}
		a.n--
		if a.of[e.p.name] == e {
			delete(a.of, e.p.name)
		}
		switch {
		case e.p.retired.Load():
			l.owe(e)
		case e.late(now):
			missed = l.shed(e.p, e.slot, missed)
		default:
			out = append(out, e)
			a.burst.started++
			waited = true
			room--
		}
	}
	missed = l.shedLate(now, missed)
	if len(a.queue) > 0 && !a.queue[0].slot.Add(a.queue[0].p.jitter).After(now) {
		l.overloaded() // a slot claimed ahead is due, and still waits
	}
	if a.n == 0 {
		a.waiting.Store(false)
		a.queue = nil
	}
	return out, missed, waited
}

// wait queues e, a new slot with no room to be claimed. A slot of the
// job's schedule (a fire entry, or one held back: entry.held) overtakes
// its job's such slot waiting before it, which is owed a record once its
// window closes; one that comes after a later slot of its job is owed at
// once.
func (l *loop) wait(e *entry) {
	a := &l.adm
	if e.kind == fire || e.held {
		if old := a.of[e.p.name]; old != nil {
			// A plan a reload retired never starts its slots: a slot of the
			// job's new plan is queued whatever the retired one's waits.
			same := old.p == e.p
			switch {
			case same && old.slot.Equal(e.slot):
				return // the slot waits already
			case same && old.slot.After(e.slot):
				l.owe(e) // held back, and overtaken meanwhile by the slot that waits
				return
			case old.slot.Before(e.slot):
				old.dropped = true
				a.n--
				l.owe(old)
			}
		}
		a.of[e.p.name] = e
	}
	if !e.slot.Add(e.p.jitter).After(l.s.now()) {
		// Due: it waits. One claimed ahead of its instant that finds no
		// room waits quietly until then.
		l.overloaded()
		a.burst.waited++
	}
	a.queue = append(a.queue, e)
	a.n++
	a.waiting.Store(true)
}

// overloaded notes that a due slot waits for room: the first of a burst
// logs it.
func (l *loop) overloaded() {
	a := &l.adm
	a.burst.last = time.Now()
	if a.burst.since.IsZero() {
		a.burst.since = a.burst.last
		l.s.log.Warn("overloaded: no room to start due slots; they wait for running ones to end",
			"max_running", a.max, "running", l.runs.active.Load())
	}
}

// owe keeps e's slot until its window closes, to be recorded missed then
// if no replica claimed it. A slot of a plan a reload retired is the job's
// plan's now, if the job is still the configuration's.
func (l *loop) owe(e *entry) {
	p := e.p
	if p.retired.Load() {
		if p = l.s.jobs().plan(p.name); p == nil || p.retired.Load() {
			return // removed: its slots are no longer this replica's
		}
	}
	l.adm.owed.add(p, e.slot)
}

// shed records p's slot missed, overloaded — or paused, if its job is
// paused as this replica last read: it would not have run either. The
// store records it only once its window has closed by the store's clock,
// and not if a replica claimed it meanwhile.
func (l *loop) shed(p *plan, slot time.Time, missed []slotstore.SkipRequest) []slotstore.SkipRequest {
	l.adm.burst.shed++
	reason := reasonOverloaded
	if l.pauses.holds(p.name) {
		reason = reasonPaused
	}
	return append(missed, p.missedSkip(slot, reason))
}

// shedLate records the overtaken slots whose windows have closed, and the
// waiting ones, looking through those at most every lateEvery.
func (l *loop) shedLate(now time.Time, missed []slotstore.SkipRequest) []slotstore.SkipRequest {
	a := &l.adm
	for closed := a.owed.closed(now); closed != nil; closed = a.owed.closed(now) {
		missed = slices.Grow(missed, len(closed))
		for _, o := range closed {
			missed = l.shed(o.p, time.Unix(o.slot, 0).UTC(), missed)
		}
	}
	if time.Since(a.swept) < lateEvery {
		return missed
	}
	a.swept = time.Now()
	kept := a.queue[:0]
	for _, e := range a.queue {
		switch {
		case e.dropped:
		case e.p.retired.Load() || e.late(now):
			a.n--
			if a.of[e.p.name] == e {
				delete(a.of, e.p.name)
			}
			if e.p.retired.Load() {
				l.owe(e)
			} else {
				missed = l.shed(e.p, e.slot, missed)
			}
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
	if a.burst.since.IsZero() || a.n > 0 || time.Since(a.burst.last) < calmAfter {
		return
	}
	b := a.burst
	l.s.log.Warn("overload over", "lasted", b.last.Sub(b.since).Round(time.Millisecond), "slots_waited", b.waited,
		"started", b.started, "missed", b.shed)
	a.burst.since, a.burst.waited, a.burst.started, a.burst.shed = time.Time{}, 0, 0, 0
}

// later looks at e, a takeover or a queued slot with no room to be
// claimed, again a moment later; one whose window closes meanwhile is
// recorded overloaded, not late.
func (l *loop) later(e *entry, now time.Time) {
	e.denied = true
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
