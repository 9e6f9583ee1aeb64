package engine

import (
	"container/heap"
	"time"

	"github.com/slotcron/slotcron/internal/lease"
)

// entryKind says why an entry is in the timer heap.
type entryKind uint8

const (
	// fire is a job's next nominal slot; each job has exactly one.
	fire entryKind = iota
	// retry is a slot whose claim failed with a store error; it is still
	// bound by the starting deadline.
	retry
	// watch is a slot another replica holds; it is claimed again when that
	// lease ends, to take it over if the holder died.
	watch
	// lapse records a slot skipped, with reason, once its starting window
	// has closed for every replica, if none claimed it.
	lapse
	// queued is a slot of a job with overlap queue whose claim the store
	// answered Queued: it waits for the job's running slot to end (queue.go),
	// still bound by its starting deadline.
	queued
)

// entry is one thing the loop must do at a given time.
type entry struct {
	at    time.Time // when to act, on the scheduler's clock
	p     *plan
	slot  time.Time
	kind  entryKind
	tries int // failed claims so far, for backoff
	// reason is a lapse entry's reason for history.
	reason string
	// until bounds a watch of a retry: past it the retry is dropped (the
	// slot's starting deadline, or just before its next slot). Zero for
	// takeovers, which are not bound.
	until time.Time
	// closes, when set, is when the slot's starting window closes by the
	// store's clock, on this process's monotonic clock: the store has
	// answered that the slot was not due yet, or not missed yet, so this
	// replica's clock runs ahead of the store's, and the window is judged
	// by the store's (guarantee 7) rather than by this replica's.
	closes time.Time
	// denied marks an entry that found no room to be claimed (admit.go):
	// if its window closes before it finds some, it missed for that.
	denied bool
	// anew marks a watch that may create the slot's marker: the claim of
	// a run whose marker the store lost, by the replica that ran it, for a
	// job declared after_data_loss: run (loss.go).
	anew bool
	// dropped marks a queued entry that no longer stands for the job's
	// waiting slot: the job's next slot replaced it, or the end of a run
	// brought it forward as a new entry. It is dropped when popped.
	dropped bool
	// held marks a slot of the job's schedule put back while the pauses
	// it needs were read (holdNew): a retry entry, since the job's next
	// slot is scheduled already, but one that the job's next slot
	// overtakes as it would the fire entry it was (admit.go), so a job
	// still waits for room with one slot of its schedule.
	held bool
}

// late reports whether e's slot can no longer start: its starting window
// has closed by the store's clock when the store has said where that
// stands (reckoned, like a lease, on the monotonic clock and on the wall
// clock, which goes on while the host is suspended), and by the
// scheduler's clock (now) otherwise.
func (e *entry) late(now time.Time) bool {
	if !e.closes.IsZero() {
		return !lease.Within(time.Now(), e.closes)
	}
	return now.After(e.slot.Add(e.p.deadline))
}

// lateReason is why e's slot missed its window: the replica woke late, or
// the store did not answer its claims, or it found no room (logged once
// per overload, not a line each).
func (e *entry) lateReason() string {
	switch {
	case e.denied:
		return reasonOverloaded
	case e.tries > 0:
		return reasonUnavailable
	}
	return reasonLate
}

// entryHeap is a min-heap on (at, slot); only the loop goroutine touches it.
type entryHeap []*entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].slot.Before(h[j].slot) // so a batch claims, and fences, in slot order
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(*entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// push adds e. Its time is kept as a wall reading only (Round(0)), so that
// every entry compares with every other, and with the clock, the same way:
// a fire entry's time, from the schedule, has no monotonic reading, and Go
// compares a mixed pair by the wall. When the clock is set, followClock
// moves the entries that wait a span.
func (h *entryHeap) push(e *entry) {
	e.at = e.at.Round(0)
	heap.Push(h, e)
}

func (h *entryHeap) pop() *entry { return heap.Pop(h).(*entry) }
func (h entryHeap) peek() *entry { return h[0] }

// minHeap is a min-heap of T by before, for container/heap: the loop's
// smaller queues (the gates to open, the seconds owed slots close at),
// whose items are few enough that boxing one a push costs nothing.
type minHeap[T any] struct {
	items  []T
	before func(a, b T) bool
}

func (h *minHeap[T]) Len() int           { return len(h.items) }
func (h *minHeap[T]) Less(i, j int) bool { return h.before(h.items[i], h.items[j]) }
func (h *minHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *minHeap[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *minHeap[T]) Pop() any {
	n := len(h.items) - 1
	x := h.items[n]
	var zero T
	h.items[n] = zero
	h.items = h.items[:n]
	return x
}
