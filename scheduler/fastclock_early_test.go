package scheduler

import (
	"testing"
	"testing/synctest"
	"time"
)

// A replica whose clock runs ahead does not start a slot before its time:
// the store hands out a slot's first claim only once its own clock reaches
// the slot, so a marker never exists before its slot's time (and none that
// a loss of data takes is newer than the generation that follows it).
func TestFastClockStartsNoSlotEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 100 * time.Millisecond}, "tick")
		conf := `jobs: {tick: {schedule: "*/10 * * * * *", starting_deadline: 1m, lease: 3s}}`
		cfg, err := Parse("test.yaml", []byte(conf))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Replica = "fast"
		s, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()),
			WithClock(func() time.Time { return time.Now().Add(30 * time.Second) }))
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, s)
		time.Sleep(time.Minute)
		stop()
		evs := rec.snapshot()
		// Slots 30, 40 and 50 s ahead by its clock are due within the
		// minute by the store's.
		if len(evs) < 3 {
			t.Fatalf("%d runs in a minute of a job every 10 s", len(evs))
		}
		for _, ev := range evs {
			if ev.started.Before(ev.run.Slot) {
				t.Errorf("slot %v started %v early", ev.run.Slot.Format(time.TimeOnly), ev.run.Slot.Sub(ev.started))
			}
		}
	})
}
