// Run starting: the runs the loop starts from won claims, each on its own
// goroutine, and the record of them that the loop, triggers and backfills
// share.

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// runSet is the record of the runs a loop started. It is the one part of
// the loop's state shared beyond the loop goroutine: run goroutines remove
// their own run, and triggers and backfills start and cancel runs, so the
// maps are guarded by mu and the count is atomic.
type runSet struct {
	// wg counts every run and backfill of the Run, which waits for them.
	wg *sync.WaitGroup
	// active counts the runs going on, for shutdown's log lines.
	active atomic.Int64
	// hooks are the run hooks of every run the loop starts.
	hooks runHooks
	mu    sync.Mutex
	// mine holds the slots this replica is running, each with its run's
	// cancel function; run goroutines remove theirs when they end.
	mine map[slotKey]context.CancelCauseFunc
	// lost holds each run of this process that ended with its lease lost
	// and its outcome not recorded, for a lease after: its marker, which
	// the store may hold for this process that long, is never adopted as a
	// claim whose reply was lost (its job has run already). Later no store
	// answers "held" with its fence.
	lost map[slotKey]lostRun
}

// lostFor is how long, beyond a lease, a run that ended with its lease
// lost is remembered.
const lostFor = 10 * time.Minute

// lostRun is a run that ended with its lease lost: its claim's fence, and
// until when it is remembered (a lease at least: the store may still hold
// the claim that long).
type lostRun struct {
	fence int64
	until time.Time
}

// init readies an empty set whose runs wg counts and hooks hear from.
func (rs *runSet) init(wg *sync.WaitGroup, hooks runHooks) {
	rs.wg, rs.hooks = wg, hooks
	rs.mine = make(map[slotKey]context.CancelCauseFunc)
	rs.lost = make(map[slotKey]lostRun)
}

// running returns the cancel function of the run of k, if this replica
// runs it.
func (rs *runSet) running(k slotKey) (context.CancelCauseFunc, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	cancel, ok := rs.mine[k]
	return cancel, ok
}

// ranOrRuns reports whether this process runs k, or ran it under fence and
// lost its lease.
func (rs *runSet) ranOrRuns(k slotKey, fence int64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, running := rs.mine[k]
	lr, ran := rs.lost[k]
	return running || (ran && lr.fence == fence)
}

// ended removes k, which ended as end; a run whose lease was lost is
// remembered for a lease, and those remembered longer are forgotten.
func (rs *runSet) ended(k slotKey, fence int64, lease time.Duration, end End) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.mine, k)
	if end != EndLeaseLost {
		return
	}
	now := time.Now()
	for lk, lr := range rs.lost { // few: a lease lost is rare
		if now.After(lr.until) {
			delete(rs.lost, lk)
		}
	}
	// Kept a lease, and ten minutes more: a store that lost its data may
	// be down that long before it answers that the run's marker is gone
	// (loss.go).
	rs.lost[k] = lostRun{fence: fence, until: now.Add(lease + lostFor)}
}

func (l *loop) runningNow() int64 { return l.runs.active.Load() }

// start runs a won claim in its own goroutine, which the loop can cancel.
func (l *loop) start(p *plan, c slotstore.Claim, o origin, sent time.Time, b begin) {
	l.startWith(p, c, o, sent, b, nil)
}

// startWith starts the run of a won claim, started as o says, when b says,
// as start does, and sends how it ended on done, if done is not nil (a buffered
// channel: the run never waits for the receiver). Only the loop's own
// goroutine may pass a b in the future: its run waits for the gate of its
// instant (gates.go).
func (l *loop) startWith(p *plan, c slotstore.Claim, o origin, sent time.Time, b begin, done chan<- End) {
	l.runs.active.Add(1)
	l.s.metrics.inFlight.Inc()
	k := slotKey{p.name, c.Slot.Unix()}
	ctx, cancel := context.WithCancelCause(l.runCtx)
	l.runs.mu.Lock()
	l.runs.mine[k] = cancel
	l.runs.mu.Unlock()
	if b.at.After(time.Now()) {
		b.gate = l.gates.of(b.at)
	}
	l.runs.wg.Add(1)
	go l.runOne(ctx, cancel, k, p, c, o, sent, b, done) // one allocation, where WaitGroup.Go and a closure take two
}

// runOne runs a claim started by startWith to its end, on its own goroutine.
func (l *loop) runOne(ctx context.Context, cancel context.CancelCauseFunc, k slotKey, p *plan, c slotstore.Claim,
	o origin, sent time.Time, b begin, done chan<- End) {
	defer l.runs.wg.Done()
	defer func() {
		l.s.metrics.inFlight.Dec()
		l.runs.active.Add(-1)
		l.runEndedHere() // after it leaves the count, so its room is seen
	}()
	end := l.s.execute(ctx, cancel, l.st, p, c, o, sent, b, l.runs.hooks)
	l.runs.ended(k, c.Fence, p.lease, end)
	if done != nil {
		done <- end
	}
	if p.overlap == policy.OverlapQueue && end != EndLeaseLost {
		// A slot of the job may wait for this run: claim it now, not when
		// the waiting replicas look again. A full channel drops the note;
		// the waiting slot is claimed when it looks again.
		select {
		case l.watches <- watchNote{p: p, slot: c.Slot, ended: true}:
		default:
		}
	}
	if end != EndLeaseLost {
		return
	}
	// The successor may die too, and the replicas that watched the slot may
	// be gone or busy elsewhere: watch it like any claimed slot. A full
	// channel drops the note; the next scan finds the slot.
	select {
	case l.watches <- watchNote{p: p, slot: c.Slot, at: l.s.now()}:
	default:
	}
}

// noteRetry asks the loop to watch slot of p from at, when its retry is due.
func (l *loop) noteRetry(p *plan, slot, at time.Time) {
	select {
	case l.watches <- watchNote{p: p, slot: slot, at: at, retry: true}:
	case <-l.runCtx.Done():
	}
}
