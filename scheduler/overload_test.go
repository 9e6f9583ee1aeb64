package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A replica given more slots than max_running lets stays at the cap: a due
// slot with no room waits for a run to end and starts then if its window is
// still open; one whose window closes first, or that its job's next slot
// overtakes, is recorded skipped, "missed: overloaded", and counted. No
// slot is left without a record, and Run returns within shutdown_grace of
// its cancel.
func TestMaxRunningBoundsRunsAndRecordsTheRestOverloaded(t *testing.T) {
	// A 5 s window closes before the job's next slot; a 15 s one does not,
	// and the next slot overtakes the one waiting.
	for _, deadline := range []string{"5s", "15s"} {
		t.Run(deadline, func(t *testing.T) { testMaxRunning(t, deadline) })
	}
}

const overloadedLine = "overloaded: no room to start due slots; they wait for running ones to end"

func testMaxRunning(t *testing.T, deadline string) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, most atomic.Int32
		base := time.Now().Truncate(time.Minute) // the fake clock began on a minute
		reg := jobs.NewRegistry()
		names := []string{"a", "b", "c", "d"}
		for _, name := range names {
			reg.Register(name, func(ctx context.Context, run jobs.Run) error {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if run.Slot.Sub(base) > 25*time.Second {
					return nil // the load ends: from :30 on runs are instant
				}
				timer := time.NewTimer(12 * time.Second)
				defer timer.Stop()
				select {
				case <-timer.C:
				case <-ctx.Done():
				}
				return nil
			})
		}
		st := memstore.New(memstore.Options{})
		// Four jobs every 10 s whose runs take 12 s, two at a time. At
		// :10 two slots start and two wait, missed when their 5 s windows
		// close (or when :20 overtakes them); at :20 all four wait, and two
		// start at :22 as the runs of :10 end. From :30 on runs are
		// instant, and from :40 only a and b have slots: the overload
		// ends.
		until := base.Add(35 * time.Second).Format(time.RFC3339) // c and d end: two slots at a time fit
		conf := "max_running: 2\nshutdown_grace: 1s\ndefaults: {catch_up: none, lease: 4s, starting_deadline: " + deadline + "}\n" +
			"jobs: {a: {schedule: '*/10 * * * * *'}, b: {schedule: '*/10 * * * * *'}, " +
			"c: {schedule: '*/10 * * * * *', active: {until: '" + until + "'}}, d: {schedule: '*/10 * * * * *', active: {until: '" + until + "'}}}"
		metrics := prometheus.NewRegistry()
		var logs testlog.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		stop := start(t, replica(t, st, "r", conf, reg, WithRegistry(metrics), WithLogger(log)))
		// Slots :10 to :30 come due and their windows close; the overload
		// ends with :30, and is over a minute later.
		time.Sleep(100 * time.Second)
		synctest.Wait()
		if got := most.Load(); got != 2 {
			t.Errorf("at most %d runs at once, want 2 (max_running)", got)
		}
		stopped := time.Now()
		stop()
		if took := time.Since(stopped); took > 2*time.Second {
			t.Errorf("Run returned %v after its cancel, want within shutdown_grace + 1s", took)
		}

		var overloaded, ran, recorded int // recorded: overloaded, of any slot
		for _, name := range names {
			bySlot := map[int64]slotstore.Marker{}
			for _, m := range history(t, st, name) {
				bySlot[m.Slot.Unix()] = m
				if m.Reason == "missed: overloaded" {
					recorded++
				}
			}
			for s := base.Add(10 * time.Second); !s.After(base.Add(30 * time.Second)); s = s.Add(10 * time.Second) {
				m, ok := bySlot[s.Unix()]
				switch {
				case !ok:
					t.Errorf("job %s: slot %s has no record", name, s.Format(time.RFC3339))
				case m.State == slotstore.StateSkipped:
					if m.Reason != "missed: overloaded" {
						t.Errorf("job %s: slot %s skipped with reason %q, want missed: overloaded", name, s.Format(time.RFC3339), m.Reason)
					}
					overloaded++
				default:
					ran++
				}
			}
		}
		if ran == 0 || overloaded == 0 {
			t.Errorf("%d slots ran and %d were missed as overloaded, want some of each", ran, overloaded)
		}
		var counted float64
		for _, name := range names {
			counted += counter(t, metrics, "slotcron_slots_missed_total", "job_name", name, "reason", "overloaded")
		}
		if int(counted) != recorded {
			t.Errorf("slots_missed_total{reason=overloaded} counts %v, history %d", counted, recorded)
		}
		// One overload, one line as it began and one as it ended; no line
		// per slot.
		lines := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var l struct{ Msg string }
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			lines[l.Msg]++
		}
		if lines[overloadedLine] != 1 || lines["overload over"] != 1 || lines["slot missed"]+lines["slots missed"] != 0 {
			t.Errorf("lines: %d %q, %d overload over, %d slot(s) missed; want 1, 1, 0", lines[overloadedLine], overloadedLine,
				lines["overload over"], lines["slot missed"]+lines["slots missed"])
		}
	})
}
