package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
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

// The first slot of a job in a brand-new store came due before the store
// began to record the job: history, the dashboard and a backfill's plan say
// so, as the log line does, and not "data loss", which is kept for slots a
// store may really have lost.
func TestNewStoreSaysJustBegun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		reg := jobs.NewRegistry()
		reg.Register("tick", func(context.Context, jobs.Run) error { return nil })
		// catch_up latest looks at the slot due 5 s before the start.
		time.Sleep(5 * time.Second)
		first := time.Now().Add(-5 * time.Second)
		var buf testlog.Buffer
		s := replica(t, st, "a", `jobs: {tick: {schedule: "@every 10s"}}`, reg, WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
		stop := start(t, s)
		defer stop()
		for deadline := time.Now().Add(time.Minute); len(history(t, st, "tick")) < 3; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the job did not run")
			}
		}
		const why = "the store has just begun to record the job"
		// The dashboard reads the history API, which answers while Run runs.
		rec := httptest.NewRecorder()
		admin.Handler(s.eng, admin.Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/jobs/tick/history", nil))
		var view struct {
			Slots []struct{ Slot, Reason string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &view); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("history API: %d %v\n%s", rec.Code, err, rec.Body)
		}
		shown := ""
		for _, v := range view.Slots {
			if v.Slot == first.Format(time.RFC3339) {
				shown = v.Reason
			}
		}
		if !strings.Contains(shown, why) {
			t.Errorf("history API shows %q for %v, want %q\n%s", shown, first, why, rec.Body)
		}
		stop()

		m, ok := markerOf(history(t, st, "tick"), first)
		if !ok || m.State != slotstore.StateSkipped || !strings.Contains(m.Reason, why) || strings.Contains(m.Reason, "data loss") {
			t.Errorf("history of the first slot %v: %+v, want skipped saying %q", first, m, why)
		}
		if logged := buf.Logged(t, "slot not caught up: "+why); len(logged) != 1 || logged[0]["slot"] != first.Format(time.RFC3339) {
			t.Errorf("logged %v, want one line for %v", logged, first)
		}
		// A backfill's plan, from a minute before the store knew the job.
		plan, err := s.Backfill(context.Background(), "tick", BackfillParams{From: first.Add(-time.Minute), To: first, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, sl := range plan.Slots {
			if sl.Action != BackfillLeave || strings.Contains(sl.Reason, "data loss") || sl.Slot.Equal(first) && !strings.Contains(sl.Reason, why) {
				t.Errorf("backfill plan: slot %v %s %s: %q; want left, not for data loss", sl.Slot, sl.Action, sl.State, sl.Reason)
			}
		}
	})
}

// A replica whose clock runs 30 s behind the store's, restarted just after
// the store pruned the marker of a slot that ran (its history ended by the
// store's clock, not yet by the replica's), does not record that slot
// missed: catch-up leaves a minute of margin at the end of history, as a
// backfill does.
func TestSlowClockNoFalseMiss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{Clock: func() time.Time { return time.Now().Add(30 * time.Second) }})
		reg := jobs.NewRegistry()
		reg.Register("hourly", func(context.Context, jobs.Run) error { return nil })
		conf := "jobs: {hourly: {schedule: '0 * * * *', history: 10m}}"
		time.Sleep(30 * time.Minute)
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(35 * time.Minute) // 01:00 runs
		stop()
		slot := time.Date(2000, 1, 1, 1, 0, 0, 0, time.UTC)
		if m, ok := markerOf(history(t, st, "hourly"), slot); !ok || m.State != slotstore.StateDone {
			t.Fatalf("marker of %v: %+v, want done", slot, m)
		}
		// 01:10:15 by the store's clock: the marker's history has ended.
		time.Sleep(time.Until(time.Date(2000, 1, 1, 1, 9, 45, 0, time.UTC)))
		if _, err := st.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ms := history(t, st, "hourly"); len(ms) != 0 {
			t.Fatalf("history after the prune: %+v, want none", ms)
		}
		stop = start(t, replica(t, st, "a", conf, reg))
		time.Sleep(5 * time.Second)
		stop()
		if m, ok := markerOf(history(t, st, "hourly"), slot); ok {
			t.Errorf("slot %v ran, now recorded %s: %q", slot, m.State, m.Reason)
		}
	})
}

// A replica whose clock runs 2 s ahead of the store's starts a brand-new
// store: the first slot, due before the store began to record the job, is
// recorded as such, not as "data loss" (a generation born within the
// clocks' margin of the start-up's enrolment was begun by it).
func TestFastClockNewStoreSaysJustBegun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{Clock: func() time.Time { return time.Now().Add(-2 * time.Second) }})
		reg := jobs.NewRegistry()
		reg.Register("tick", func(context.Context, jobs.Run) error { return nil })
		time.Sleep(5 * time.Second)
		first := time.Now().Add(-5 * time.Second)
		stop := start(t, replica(t, st, "a", `jobs: {tick: {schedule: "@every 10s"}}`, reg))
		time.Sleep(30 * time.Second)
		stop()
		m, ok := markerOf(history(t, st, "tick"), first)
		if !ok || m.State != slotstore.StateSkipped || !strings.Contains(m.Reason, "the store has just begun to record the job") {
			t.Errorf("first slot %v of a brand-new store, replica clock 2 s fast: %+v, want skipped as just begun", first, m)
		}
	})
}

// markerOf returns the marker of slot among ms.
func markerOf(ms []slotstore.Marker, slot time.Time) (slotstore.Marker, bool) {
	for _, m := range ms {
		if m.Slot.Equal(slot) {
			return m, true
		}
	}
	return slotstore.Marker{}, false
}
