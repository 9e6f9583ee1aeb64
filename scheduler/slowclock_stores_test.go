package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A replica whose clock runs behind the store's by twice the starting
// deadline claims each slot when its own clock says it is due, after the
// slot's window has closed by the store's: the store records the slot
// missed (late) rather than hand it out, so nothing starts late, on every
// store. (A clock that runs ahead starts nothing early:
// TestFastClockStartsNoSlotEarly.)
func TestSlowClockStartsNoSlotLate(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		st := memstore.New(memstore.Options{})
		slowClockOnStore(t, func() slotstore.Store { return st })
	})
	onSharedStores(t, slowClockOnStore)
}

func slowClockOnStore(t *testing.T, open func() slotstore.Store) {
	const deadline = time.Second
	rec := &recorder{}
	reg := jobs.NewRegistry()
	reg.Register("tick", rec.fn)
	doc := "jobs: {tick: {schedule: '* * * * * *', starting_deadline: 1s, lease: 3s, catch_up: none}}"
	behind := func() time.Time { return time.Now().Add(-2 * deadline) }
	stop := start(t, replica(t, open(), "behind", doc, reg, WithClock(behind)))
	// Polls the condition rather than a time: a busy machine may be slow
	// to bring the replica up. One handle reads, as an operator's would.
	reader := open()
	late := func() int {
		n := 0
		for _, m := range history(t, reader, "tick") {
			if m.State == slotstore.StateSkipped && m.Reason == slotstore.ReasonLate {
				n++
			}
		}
		return n
	}
	for end := time.Now().Add(time.Minute); late() < 4 && len(rec.snapshot()) == 0 && time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
	}
	stop()

	for _, ev := range rec.snapshot() {
		t.Errorf("slot %s started at %s, %v after it (its window is %v)", stamp(ev.run.Slot),
			ev.started.Format(time.StampMilli), ev.started.Sub(ev.run.Slot), deadline)
	}
	n := 0
	for _, m := range history(t, reader, "tick") {
		switch {
		case m.State == slotstore.StateSkipped && m.Reason == slotstore.ReasonLate:
			n++
			if m.Holder != "behind" || !m.ClaimedAt.After(m.Slot.Add(deadline)) {
				t.Errorf("slot %s recorded late by %s at %s, within its window", stamp(m.Slot), m.Holder,
					m.ClaimedAt.Format(time.StampMilli))
			}
		case m.State == slotstore.StateSkipped && strings.HasPrefix(m.Reason, "not caught up"):
			// Due by the replica's clock before the store began to record
			// the job.
		default:
			t.Errorf("slot %s is %s %q, want skipped %q", stamp(m.Slot), m.State, m.Reason, slotstore.ReasonLate)
		}
	}
	if n < 4 {
		t.Errorf("%d slots recorded late, want at least 4", n)
	}
}
