package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/slotstore"
)

// A calendar's dates are skipped, recorded with the calendar's name, and a
// backfill leaves them alone; max_runs and active.until end a job on every
// replica, which says so once each. (The fake clock starts on 2000-01-01.)
func TestCalendarsAndEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{}, "hol", "limited", "until")
		conf := `
calendars: {year2000: {dates: [2000-01-01, "2000-12-25"]}}
jobs:
  hol: {schedule: "*/10 * * * * *", except: [year2000], catch_up: none}
  limited: {schedule: "*/10 * * * * *", active: {from: 2000-01-01T00:00:00Z}, max_runs: 3}
  until: {schedule: "*/10 * * * * *", active: {until: 2000-01-01T00:00:40Z}}
`
		var buf testlog.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, nil))
		var stops []func()
		for _, name := range []string{"a", "b", "c"} {
			stops = append(stops, start(t, replica(t, st, name, conf, reg, WithLogger(logger))))
		}
		time.Sleep(2 * time.Minute)
		stopAll(stops...)

		runs := map[string][]time.Time{}
		for _, ev := range rec.snapshot() {
			runs[ev.run.Job] = append(runs[ev.run.Job], ev.run.Slot)
		}
		if len(runs["hol"]) != 0 {
			t.Errorf("hol ran %d slots on a calendar's date", len(runs["hol"]))
		}
		ms := history(t, st, "hol")
		if len(ms) < 10 {
			t.Fatalf("hol: %d markers, want a record of every slot", len(ms))
		}
		for _, m := range ms {
			if m.State != slotstore.StateSkipped || m.Reason != "calendar year2000" {
				t.Errorf("hol %s: %s %q, want skipped for calendar year2000", m.Slot.Format(time.RFC3339), m.State, m.Reason)
			}
		}
		if n := len(runs["limited"]); n != 3 {
			t.Errorf("limited ran %d slots, want max_runs 3", n)
		}
		if n := len(runs["until"]); n != 5 { // 00:00, :10, :20, :30, :40
			t.Errorf("until ran %d slots, want 5, up to active.until", n)
		}
		ended := map[string]int{}
		for _, line := range strings.Split(buf.String(), "\n") {
			var l struct{ Msg, Job string }
			if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "job ended") {
				ended[l.Job]++
			}
		}
		if ended["limited"] != 3 || ended["until"] != 3 || ended["hol"] != 0 {
			t.Errorf("job ended lines by job %v, want one per replica for limited and until", ended)
		}

		s := replica(t, st, "d", conf, reg)
		stop := start(t, s)
		defer stop()
		plan, err := s.Backfill(context.Background(), "hol", BackfillParams{From: ms[len(ms)-1].Slot, To: ms[0].Slot, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if plan.ToRun() != 0 {
			t.Errorf("a backfill plans to run %d slots a calendar skips", plan.ToRun())
		}
		for _, bs := range plan.Slots {
			if bs.Action != BackfillLeave || bs.Reason != "calendar year2000" {
				t.Errorf("backfill of %s: %s %q", bs.Slot.Format(time.RFC3339), bs.Action, bs.Reason)
			}
		}
	})
}

// A calendar's slot that came due while no replica ran is recorded for its
// calendar, not as missed: it was never to run (catch-up and the start-up's
// record of slots owed both make it through the one constructor of missed
// skips).
func TestCalendarSlotsDuringAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{}, "hol")
		conf := `
calendars: {year2000: {dates: [2000-01-01]}}
jobs: {hol: {schedule: "*/10 * * * * *", except: [year2000], catch_up: all, starting_deadline: 5s}}
`
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(15 * time.Second)
		stop()
		time.Sleep(time.Minute) // six slots nobody ran
		stop = start(t, replica(t, st, "a", conf, reg))
		time.Sleep(15 * time.Second)
		stop()
		if n := len(rec.snapshot()); n != 0 {
			t.Errorf("%d runs on a calendar's date", n)
		}
		ms := history(t, st, "hol")
		if len(ms) < 9 {
			t.Errorf("%d markers, want every slot of the 90 s recorded", len(ms))
		}
		for _, m := range ms {
			if m.State != slotstore.StateSkipped || m.Reason != "calendar year2000" {
				t.Errorf("%s: %s %q, want skipped for calendar year2000", m.Slot.Format(time.RFC3339), m.State, m.Reason)
			}
		}
	})
}
