package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestFastClockPauseErasesNoFutureSlot: a replica whose clock runs ahead
// cannot record slots of the future as skipped "paused" while the job is
// paused: the store refuses before the slot's time by its own clock, so the
// slots due after the resume run.
func TestFastClockPauseErasesNoFutureSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		st, rec, reg := rig(&recorder{sleep: 100 * time.Millisecond}, "tick")
		conf := `jobs: {tick: {schedule: "*/5 * * * * *", starting_deadline: 30s, lease: 3s}}`
		stop1 := start(t, replica(t, st, "r1", conf, reg))
		cfg, err := Parse("test.yaml", []byte(conf))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Replica = "skewed"
		s, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()), WithClock(func() time.Time { return time.Now().Add(time.Minute) }))
		if err != nil {
			t.Fatal(err)
		}
		stop2 := start(t, s)
		time.Sleep(60 * time.Second)
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: "tick", Paused: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second) // paused from t0+60s to t0+80s
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: "tick", Paused: false}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Second)
		stop1()
		stop2()
		seen := map[time.Time]int{}
		for _, ev := range rec.snapshot() {
			seen[ev.run.Slot]++
		}
		// Slots after the resume must run once.
		for s := t0.Add(85 * time.Second).Truncate(5 * time.Second); s.Before(t0.Add(170 * time.Second)); s = s.Add(5 * time.Second) {
			if seen[s.UTC()] != 1 {
				m, _ := findMarker(st, "tick", s)
				t.Errorf("slot %v (t0+%v, after the resume at t0+80s) ran %d times; marker %s %q by %s", s.UTC().Format(time.TimeOnly), s.Sub(t0), seen[s.UTC()], m.State, m.Reason, m.Holder)
			}
		}
	})
}
