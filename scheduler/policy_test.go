package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

func history(t *testing.T, st slotstore.Store, job string) []slotstore.Marker {
	t.Helper()
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: job, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// stopAll stops replicas together, as an orchestrator stopping a whole
// deployment would: each stop's cancellation happens before the fake clock
// can move, so no replica outlives another and takes over the slots that
// one releases on shutdown (which stopping them one after another allows).
func stopAll(stops ...func()) {
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Go(stop)
	}
	wg.Wait()
}

// overlap: forbid skips slots, cluster-wide, while an earlier slot runs;
// replace cancels the earlier run and runs the new slot; queue makes the
// new slot wait for the earlier run's end, one slot waiting at most.
func TestOverlap(t *testing.T) {
	for _, policy := range []string{"allow", "forbid", "replace", "queue"} {
		t.Run(policy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, rec, reg := rig(&recorder{sleep: 25 * time.Second}, "slow")
				// A 4s lease renews every 1.33s, so a renewal never falls on
				// the very instant a slot's claim replaces the run it renews;
				// see replace below.
				conf := "shutdown_grace: 1s\njobs: {slow: {schedule: '*/10 * * * * *', catch_up: none, lease: 4s, overlap: " + policy + "}}"
				stopA := start(t, replica(t, st, "a", conf, reg))
				stopB := func() {}
				if policy != "replace" { // replace on one replica: every replaced run is cancelled at once
					stopB = start(t, replica(t, st, "b", conf, reg))
				}
				time.Sleep(35 * time.Second)
				// Slots 20 and 30 are still running: stopped one after the
				// other, the replica still up would take over the runs the
				// first one releases, and count a fifth run.
				stopAll(stopA, stopB)
				evs := rec.snapshot()
				states := map[slotstore.State]int{}
				for _, m := range history(t, st, "slow") {
					states[m.State]++
					if m.State == slotstore.StateSkipped && m.Reason != slotstore.ReasonOverlap {
						t.Errorf("skipped with reason %q", m.Reason)
					}
				}
				switch policy {
				case "allow": // slots 0, 10, 20, 30 all start; runs overlap
					if len(evs) != 4 {
						t.Errorf("allow: %d runs, want 4", len(evs))
					}
				case "forbid": // 0 runs to 25 s; 10 and 20 are skipped; 30 runs
					if len(evs) != 2 || states[slotstore.StateSkipped] != 2 || !evs[0].finished {
						t.Errorf("forbid: %d runs, states %v", len(evs), states)
					}
				case "queue": // 0 runs to 25 s; 10 waits until 20 replaces it; 20 starts at 25 s; 30 waits
					if len(evs) != 2 || states[slotstore.StateSkipped] != 1 || !evs[0].finished {
						t.Fatalf("queue: %d runs, states %v", len(evs), states)
					}
					if got := evs[1].run.Slot.Sub(evs[0].run.Slot); got != 20*time.Second {
						t.Errorf("queue: the second run is of the slot %v after the first, want 20s", got)
					}
					if evs[1].started.Before(evs[0].ended) || evs[1].started.Sub(evs[0].ended) > 50*time.Millisecond {
						t.Errorf("queue: the waiting slot started %v after its predecessor ended", evs[1].started.Sub(evs[0].ended))
					}
				case "replace": // each slot replaces the one before
					// The loop cancels a replaced run of its own as
					// replaced when the replacing claim returns. A renewal
					// of that run reaching the store in between is refused
					// and cancels it as lease lost instead: the 4s lease keeps
					// the fake clock from putting both on one instant.
					if len(evs) != 4 || states[slotstore.StateReplaced] != 3 {
						t.Errorf("replace: %d runs, states %v", len(evs), states)
					}
					for _, ev := range evs[:3] {
						if !errors.Is(ev.cause, engine.ErrReplaced) {
							t.Errorf("replaced run ended with %v, want it cancelled as replaced", ev.cause)
						}
						if next := ev.run.Slot.Add(10 * time.Second); ev.ended.After(next) {
							t.Errorf("replaced run ended at %v, after the slot that replaced it", ev.ended)
						}
					}
				}
			})
		})
	}
}

// A failed run is retried with attempt+1 and a higher fence, with backoff,
// by whichever replica claims the retry (the engine's TestRetryAt: never
// past the starting deadline).
func TestRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		var calls atomic.Int32
		var runs []jobs.Run
		reg := jobs.NewRegistry()
		reg.Register("flaky", func(ctx context.Context, run jobs.Run) error {
			runs = append(runs, run)
			if calls.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		})
		conf := "jobs: {flaky: {schedule: '@every 1h', lease: 2s, retries: {max: 5, backoff: 1s}}}"
		stopA := start(t, replica(t, st, "a", conf, reg))
		stopB := start(t, replica(t, st, "b", conf, reg))
		time.Sleep(30 * time.Second)
		stopA()
		stopB()
		if len(runs) != 3 {
			t.Fatalf("%d runs, want 3", len(runs))
		}
		for i, r := range runs {
			if r.Attempt != i+1 || (i > 0 && r.Fence <= runs[i-1].Fence) || !r.Slot.Equal(runs[0].Slot) {
				t.Errorf("run %d: attempt %d fence %d slot %v", i, r.Attempt, r.Fence, r.Slot)
			}
		}
		ms := history(t, st, "flaky")
		if len(ms) != 1 || ms[0].State != slotstore.StateDone || ms[0].Outcome != slotstore.Succeeded || ms[0].Attempt != 3 {
			t.Errorf("history %+v", ms)
		}
	})
}

// Pausing a job in the store stops every replica from starting its slots
// (recorded as skipped, reason paused); resuming starts them again.
func TestPauseAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{}, "tick")
		conf := "jobs: {tick: {schedule: '*/1 * * * * *', catch_up: none}}"
		stopA := start(t, replica(t, st, "a", conf, reg))
		stopB := start(t, replica(t, st, "b", conf, reg))
		// Before the next slot is claimed, ahead of its instant: a slot
		// claimed before the pause still starts.
		time.Sleep(3250 * time.Millisecond)
		ctx := context.Background()
		if err := st.SetPause(ctx, slotstore.PauseParams{Job: "tick", Paused: true}); err != nil {
			t.Fatal(err)
		}
		paused := len(rec.snapshot())
		time.Sleep(5 * time.Second)
		during := len(rec.snapshot()) - paused
		if err := st.SetPause(ctx, slotstore.PauseParams{Job: "tick", Paused: false}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		stopA()
		stopB()
		after := len(rec.snapshot()) - paused - during
		if during != 0 || after < 2 {
			t.Errorf("runs while paused %d, after resume %d", during, after)
		}
		skipped := 0
		for _, m := range history(t, st, "tick") {
			if m.State == slotstore.StateSkipped && m.Reason == "paused" {
				skipped++
			}
		}
		if skipped < 4 {
			t.Errorf("%d slots recorded skipped for the pause, want about 5", skipped)
		}
	})
}

// After every replica was down across 5 slots, the first one back runs them
// as catch_up says, and every slot it does not run is in history with its
// reason; slots older than the starting deadline are recorded missed.
func TestOutageCatchUpHistory(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		runs    int
		catchUp int
	}{
		{"none", 0, 5}, {"latest", 1, 4}, {"all", 5, 0},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, rec, reg := rig(&recorder{}, "j")
				conf := fmt.Sprintf("jobs: {j: {schedule: '@every 10s', starting_deadline: 1m, catch_up: %s}}", tc.policy)
				t0 := time.Now()
				stop := start(t, replica(t, st, "a", conf, reg))
				time.Sleep(5 * time.Second) // slot 0 runs
				stop()
				time.Sleep(50 * time.Second) // slots 10..50 come and go with nobody up
				stop = start(t, replica(t, st, "b", conf, reg))
				time.Sleep(70 * time.Second) // every window of 10..50 closes
				stop()
				got := 0
				for _, ev := range rec.snapshot() {
					if s := ev.run.Slot.Sub(t0); s >= 10*time.Second && s <= 50*time.Second {
						got++
					}
				}
				if got != tc.runs {
					t.Errorf("caught up %d slots, want %d", got, tc.runs)
				}
				reasons := 0
				for _, m := range history(t, st, "j") {
					if m.State == slotstore.StateSkipped && strings.HasPrefix(m.Reason, "catch_up") {
						reasons++
					}
				}
				if reasons != tc.catchUp {
					t.Errorf("%d slots recorded skipped by catch_up, want %d", reasons, tc.catchUp)
				}
			})
		})
	}
}

// A manual trigger runs the job at once as a slot of its own, recorded as
// manual; a forbid job that is running answers busy.
func TestTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _, reg := rig(&recorder{sleep: 5 * time.Second}, "report")
		conf := "jobs: {report: {schedule: '@daily', catch_up: none, overlap: forbid}}"
		s := replica(t, st, "cli", conf, reg)
		res, err := s.Trigger(context.Background(), "report")
		if err != nil || res.End != "succeeded" {
			t.Fatalf("trigger: %+v %v", res, err)
		}
		ms := history(t, st, "report")
		if len(ms) != 1 || !ms[0].Manual || ms[0].Outcome != slotstore.Succeeded {
			t.Fatalf("history %+v", ms)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := replica(t, st, "cli2", conf, reg).Trigger(context.Background(), "report"); err != nil {
				t.Errorf("first trigger: %v", err)
			}
		}()
		time.Sleep(time.Second)
		if _, err := replica(t, st, "cli3", conf, reg).Trigger(context.Background(), "report"); !errors.Is(err, ErrBusy) {
			t.Errorf("trigger while running: %v, want ErrBusy", err)
		}
		<-done
	})
}

// Slots that came due during an outage longer than the starting deadline can
// no longer run; the first replica back records each as missed.
func TestOutageRecordsMissedSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _, reg := rig(&recorder{}, "j")
		conf := "jobs: {j: {schedule: '@every 10s', starting_deadline: 15s, catch_up: latest}}"
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(5 * time.Second)
		stop()
		time.Sleep(60 * time.Second) // slots 10..60 pass with nobody up
		stop = start(t, replica(t, st, "b", conf, reg))
		time.Sleep(time.Second)
		stop()
		missed, ran := 0, 0
		for _, m := range history(t, st, "j") {
			switch {
			case m.State == slotstore.StateSkipped && strings.HasPrefix(m.Reason, "missed"):
				missed++
			case m.State == slotstore.StateDone:
				ran++
			}
		}
		// 0 ran; 10..40 are past the 15 s deadline at 65 s; 50 is left to
		// its still open window; 60 runs as the latest.
		if missed != 4 || ran != 2 {
			t.Errorf("missed %d, ran %d; want 4 and 2", missed, ran)
		}
	})
}

// A replica starting while another is up never records as skipped a slot
// the live one has yet to claim (here: delayed by jitter).
func TestCatchUpLeavesLiveSlotsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		st, rec, reg := rig(&recorder{}, "b")
		if j := jitterFor("b", 8*time.Second); j < 2*time.Second {
			t.Fatalf("jitter of b is %v; the test needs one of at least 2s", j)
		}
		conf := "jobs: {b: {schedule: '@every 10s', jitter: 8s, catch_up: none}}"
		stopA := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(21500 * time.Millisecond)
		stopB := start(t, replica(t, st, "late", conf, reg))
		time.Sleep(40 * time.Second)
		stopA()
		stopB()
		seen := map[time.Duration]int{}
		for _, ev := range rec.snapshot() {
			seen[ev.run.Slot.Sub(t0)]++
		}
		for s := 10 * time.Second; s <= 50*time.Second; s += 10 * time.Second {
			if seen[s] != 1 {
				t.Errorf("slot +%v ran %d times", s, seen[s])
			}
		}
		for _, m := range history(t, st, "b") {
			if m.State == slotstore.StateSkipped {
				t.Errorf("slot %v recorded skipped: %s", m.Slot.Sub(t0), m.Reason)
			}
		}
	})
}

// A retry whose window closed while nobody was up is never run late.
func TestStaleRetryIsNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		var runs atomic.Int32
		reg := jobs.NewRegistry()
		reg.Register("flaky", func(ctx context.Context, run jobs.Run) error { runs.Add(1); return errors.New("no") })
		conf := "shutdown_grace: 1s\njobs: {flaky: {schedule: '@every 1h', starting_deadline: 20s, lease: 2s, catch_up: none, retries: {max: 3, backoff: 5s}}}"
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(time.Second) // attempt 1 fails; its retry is due at +5 s
		stop()
		time.Sleep(10 * time.Minute)
		stop = start(t, replica(t, st, "b", conf, reg))
		time.Sleep(2 * time.Minute)
		stop()
		if n := runs.Load(); n != 1 {
			t.Errorf("%d runs, want only the first: the retry's window closed 10 minutes ago", n)
		}
	})
}

// Two triggers in the same second each get a manual slot of their own.
func TestTriggersInOneSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _, reg := rig(&recorder{sleep: 2 * time.Second}, "report")
		conf := "jobs: {report: {schedule: '@daily', catch_up: none}}"
		results := make(chan TriggerResult, 2)
		for _, name := range []string{"cli1", "cli2"} {
			go func() {
				res, err := replica(t, st, name, conf, reg).Trigger(context.Background(), "report")
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
				results <- res
			}()
		}
		a, b := <-results, <-results
		if a.Slot.Equal(b.Slot) || a.End != "succeeded" || b.End != "succeeded" {
			t.Errorf("triggers %+v and %+v", a, b)
		}
	})
}
