package scheduler

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A replica whose clock jumps ahead by more than the starting deadline still
// runs the slots no other replica runs, each when it is due by the store's
// clock and never early: the store's answers to its claims and skips ("not
// due yet", "not missed yet") tell it where the window stands, and it
// judges the window by that. Its clock set back, it picks up the slots of
// the new time at once rather than idling until its clock reaches the old.
func TestClockOffByMoreThanTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fastFor time.Duration // from 20 s on, the clock runs a minute ahead this long
	}{
		{"ahead", time.Hour},
		{"ahead, then set back", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				var offset atomic.Int64
				st, rec, reg := rig(&recorder{sleep: 100 * time.Millisecond}, "tick")
				const deadline = 10 * time.Second
				conf := `jobs: {tick: {schedule: "*/5 * * * * *", starting_deadline: 10s, lease: 3s}}`
				cfg, err := Parse("test.yaml", []byte(conf))
				if err != nil {
					t.Fatal(err)
				}
				cfg.Replica = "skewed"
				s, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()),
					WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
				if err != nil {
					t.Fatal(err)
				}
				stop := start(t, s)
				time.Sleep(20 * time.Second)
				offset.Store(int64(time.Minute))
				fast := min(tc.fastFor, 130*time.Second)
				time.Sleep(fast)
				offset.Store(0)
				time.Sleep(130*time.Second - fast)
				stop()

				runs := map[time.Time]int{}
				for _, ev := range rec.snapshot() {
					slot := ev.run.Slot
					runs[slot]++
					if ev.started.Before(slot) || ev.started.After(slot.Add(deadline)) {
						t.Errorf("slot %v started at %v: outside its window by the store's clock",
							slot.Format(time.TimeOnly), ev.started.Format(time.TimeOnly))
					}
				}
				// The store began to record the job at t0: slots after it,
				// due while the replica ran, each run once.
				for slot := t0.Add(5 * time.Second); slot.Before(t0.Add(140 * time.Second)); slot = slot.Add(5 * time.Second) {
					if n := runs[slot.UTC()]; n != 1 {
						m, _ := findMarker(st, "tick", slot)
						t.Errorf("slot %v ran %d times; marker %s %q by %s", slot.UTC().Format(time.TimeOnly), n, m.State, m.Reason, m.Holder)
					}
				}
			})
		})
	}
}
