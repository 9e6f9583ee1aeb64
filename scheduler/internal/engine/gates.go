// Gates: a run whose claim was won ahead of its slot waits, on the
// goroutine started with the claim (whose lease keeper renews meanwhile),
// for the gate of its instant, and one goroutine opens every gate from one
// timer. The runs of an instant share its gate: a second's burst of 1,667
// runs (100k jobs spread over the minute) costs no timer a run, and the
// close that opens the gate wakes them together. Starting each run's
// goroutine at the instant instead, from one goroutine, made a burst's
// last runs wait for the others' goroutines to be made, and left a run's
// lease unrenewed while it waited.

package engine

import (
	"container/heap"
	"time"
)

// gate opens, closing open, at at (by the monotonic clock).
type gate struct {
	at   time.Time
	open chan struct{}
}

// gateSet is the loop's record of the gates not yet opened, by the instant
// they open at (Unix nanoseconds), and the hand-off of each new one to the
// opener. Only the loop goroutine touches byTime. The runs of one claim's
// answer that share a slot and a jitter share an instant (beginAt), and so
// a gate.
type gateSet struct {
	byTime map[int64]gate
	swept  time.Time
	// in hands each new gate to the opener; the loop closes it as it ends.
	in chan gate
	// opening is set while the opener runs (loop.run): a loop driven
	// without it (a test's) has no gates, and its runs wait on timers.
	opening bool
}

func (gs *gateSet) init() {
	gs.byTime = make(map[int64]gate)
	gs.in = make(chan gate, 256)
}

// of returns the gate a run due at at waits for, made and handed to the
// opener if it is the instant's first; nil when no opener runs.
func (gs *gateSet) of(at time.Time) <-chan struct{} {
	if !gs.opening {
		return nil
	}
	key := at.UnixNano()
	g, ok := gs.byTime[key]
	if ok && !g.at.After(at) {
		return g.open
	}
	// A gate of the same wall instant that opens later by the monotonic
	// clock (the wall clock was set between the two) is not this run's.
	shared := !ok
	now := time.Now()
	if now.Sub(gs.swept) > time.Second {
		// The gates past are opened: forget them.
		gs.swept = now
		for k, g := range gs.byTime {
			if g.at.Before(now) {
				delete(gs.byTime, k)
			}
		}
	}
	g = gate{at: at, open: make(chan struct{})}
	if shared {
		gs.byTime[key] = g
	}
	gs.in <- g
	return g.open
}

// openGates opens each gate handed to it on in at its time. It returns once
// in is closed (the loop has ended) and every gate is open, each then at
// its time: the runs behind them start in the shutdown's grace, as runs
// under way finish in it; or at once when stop is closed (the grace has
// ended, and the runs waiting end with it).
func openGates(in <-chan gate, stop <-chan struct{}) {
	// A gate an instant, not a run, so boxing one (container/heap) is no
	// cost.
	q := minHeap[gate]{before: func(a, b gate) bool { return a.at.Before(b.at) }}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		for q.Len() > 0 && !q.items[0].at.After(time.Now()) {
			close(heap.Pop(&q).(gate).open)
		}
		if q.Len() == 0 && in == nil {
			return
		}
		if q.Len() > 0 {
			t.Reset(time.Until(q.items[0].at))
		}
		select {
		case g, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			heap.Push(&q, g)
		case <-t.C:
		case <-stop:
			return
		}
	}
}
