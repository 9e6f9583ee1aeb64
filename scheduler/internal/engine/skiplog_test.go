package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// Log volume does not grow with replicas: of three replicas on one store,
// only the one whose skip recorded a paused job's slot logs `slot skipped`
// at INFO, one line per slot in the cluster, and the replicas whose claim
// lost a slot log `slot lost` at DEBUG only; the others' lines are DEBUG.
func TestOneInfoLinePerSlotDecisionInTheCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, ctx := memstore.New(memstore.Options{}), context.Background()
		if err := st.SetPause(ctx, slotstore.PauseParams{Job: "paused", Paused: true, By: "test"}); err != nil {
			t.Fatal(err)
		}
		var logs testlog.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, name := range []string{"a", "b", "c"} {
			var specs []JobSpec
			for _, j := range []string{"paused", "runs"} {
				spec := job(j, (&recorder{}).fn)
				spec.Schedule = mustSchedule(t, "@every 10s")
				specs = append(specs, spec)
			}
			e, err := New(Config{Replica: name, Incarnation: name, Log: log, Now: time.Now, Grace: time.Second, Jobs: specs})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if err := e.Run(runCtx, RunParams{Store: st}); err != nil {
					t.Errorf("Run %s: %v", name, err)
				}
			})
		}
		time.Sleep(time.Minute + 5*time.Second)
		stop()
		wg.Wait()

		lines := func(msg, job, level string) map[string]int { // slot: lines
			n := map[string]int{}
			for _, r := range logs.Logged(t, msg) {
				if r["job"] == job && r["level"] == level {
					n[r["slot"].(string)]++
				}
			}
			return n
		}
		skipped, debug := lines("slot skipped", "paused", "INFO"), lines("slot skipped", "paused", "DEBUG")
		if len(skipped) < 5 {
			t.Fatalf("%d paused slots logged skipped at INFO, want each of the minute's (DEBUG: %v)", len(skipped), debug)
		}
		for slot, n := range skipped {
			if n != 1 {
				t.Errorf("slot %s: %d `slot skipped` INFO lines in the cluster, want 1", slot, n)
			}
			if debug[slot] != 2 {
				t.Errorf("slot %s: %d `slot skipped` DEBUG lines, want one from each other replica", slot, debug[slot])
			}
		}
		t.Logf("paused slots logged skipped at INFO: %v; at DEBUG: %v", skipped, debug)
		started, lost := lines("run started", "runs", "INFO"), lines("slot lost", "runs", "INFO")
		if len(started) < 5 || len(lost) != 0 {
			t.Errorf("%d slots started, %d with `slot lost` at INFO; want the minute's slots, none", len(started), len(lost))
		}
		for slot, n := range started {
			if n != 1 {
				t.Errorf("slot %s started %d times", slot, n)
			}
		}
	})
}

// A replica whose skips record missed slots of many jobs at once (it froze
// past every window) logs jobLines jobs' lines and one line for the rest,
// by reason, with how many jobs and slots, and the first and last slot.
func TestMissedSlotsOfManyJobsAreOneLineBeyondJobLines(t *testing.T) {
	var logs testlog.Buffer
	var specs []JobSpec
	for i := range jobLines + 5 {
		specs = append(specs, job(fmt.Sprintf("j%02d", i), nil))
	}
	e, err := New(Config{Replica: "a", Incarnation: "t", Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: time.Now,
		Grace: time.Second, Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	var runs sync.WaitGroup
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recorded []slotstore.SkipRequest
	for i, s := range specs {
		recorded = append(recorded, slotstore.SkipRequest{Job: s.Name, Slot: t0.Add(time.Duration(i) * time.Second), Reason: reasonLate})
	}
	l.logMissed(recorded)
	if n := len(logs.Logged(t, "slot missed")); n != jobLines {
		t.Errorf("%d slot missed lines, want %d", n, jobLines)
	}
	more := logs.Logged(t, "slots of more jobs missed")
	if len(more) != 1 || more[0]["jobs"] != float64(5) || more[0]["count"] != float64(5) || more[0]["reason"] != "late" ||
		more[0]["first"] != t0.Add(jobLines*time.Second).Format(time.RFC3339) ||
		more[0]["last"] != t0.Add((jobLines+4)*time.Second).Format(time.RFC3339) {
		t.Errorf("summary lines: %v", more)
	}
}
