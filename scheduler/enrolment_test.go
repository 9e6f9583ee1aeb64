package scheduler

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A job enrolled but never run whose first slot falls in an outage is
// missed like any other: logged, recorded and counted. Its store knows when
// it enrolled the job, and that is how far back the slots it owes go; a
// job enrolled only after the outage owes none of the outage's slots.
// Misses used to be recorded back to the job's newest marker only, so a
// new nightly job whose first slot fell in a deploy never ran, silently.
func TestNeverRunJobMissedInOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		reg := jobs.NewRegistry()
		reg.Register("nightly", func(context.Context, jobs.Run) error { return nil })
		reg.Register("later", func(context.Context, jobs.Run) error { return nil })
		nightly := `{schedule: "30 2 * * *", timezone: Europe/Berlin}`
		// Enrolled at midnight UTC; its first slot is 01:30 UTC (02:30 in
		// Berlin in winter), and every replica is down from 01:28 to 01:33.
		stop := start(t, replica(t, st, "a", "jobs: {nightly: "+nightly+"}", reg))
		time.Sleep(88 * time.Minute)
		stop()
		slot := time.Now().Truncate(24 * time.Hour).Add(90 * time.Minute)
		time.Sleep(time.Until(slot.Add(3 * time.Minute)))

		var buf testlog.Buffer
		metrics := prometheus.NewRegistry()
		conf := "jobs: {nightly: " + nightly + ", later: " + nightly + "}"
		stop = start(t, replica(t, st, "a", conf, reg, WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))), WithRegistry(metrics)))
		defer stop()
		for deadline := time.Now().Add(time.Minute); len(history(t, st, "nightly")) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no marker of the missed slot")
			}
		}
		stop()

		ms := history(t, st, "nightly")
		if len(ms) != 1 || !ms[0].Slot.Equal(slot) || ms[0].State != slotstore.StateSkipped || ms[0].Reason != "missed: no replica claimed it in time" {
			t.Errorf("history of nightly: %+v, want %v skipped as missed", ms, slot)
		}
		logged := buf.Logged(t, "slot missed")
		if len(logged) != 1 || logged[0]["job"] != "nightly" || logged[0]["slot"] != slot.Format(time.RFC3339) {
			t.Errorf("logged %v, want one \"slot missed\" of nightly %v", logged, slot)
		}
		if n := counter(t, metrics, "slotcron_slots_missed_total", "job_name", "nightly", "reason", "down"); n != 1 {
			t.Errorf("slots_missed_total of nightly: %v, want 1", n)
		}
		if ms := history(t, st, "later"); len(ms) != 0 {
			t.Errorf("history of a job enrolled after the outage: %+v, want none", ms)
		}
		if n := counter(t, metrics, "slotcron_slots_missed_total", "job_name", "later", "reason", "down"); n != 0 {
			t.Errorf("slots_missed_total of a job enrolled after the outage: %v, want 0", n)
		}
	})
}
