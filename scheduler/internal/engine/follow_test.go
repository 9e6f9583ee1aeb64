package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// putSchedule writes schedule id of job run on cron spec with params.
func putSchedule(t *testing.T, st slotstore.Store, id, run, spec, params string) {
	t.Helper()
	j := job(id, nil)
	j.Run, j.Schedule, j.Deadline = run, mustSchedule(t, spec), 5*time.Second
	j.OnCrash, j.Overlap, j.CatchUp = policy.OnCrashRetry, policy.OverlapAllow, policy.CatchUpLatest
	if params != "" {
		j.Params = []byte(params)
	}
	res, err := st.WriteSchedules(context.Background(), slotstore.WriteSchedulesParams{By: "test",
		Writes: []slotstore.ScheduleWrite{{ID: id, Run: run, Spec: ScheduleSpec(j), IfVersion: slotstore.AnyVersion}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("put schedule %s: %v %v", id, err, res)
	}
}

// TestFollowSchedules: schedules held as data run beside the
// configuration's jobs; one created while Run goes on runs from its first
// slot after the put, a changed one switches to its new spec and params, a
// deleted one takes no slot after the delete, and one of a job this binary
// does not register is left alone. Metrics stay per registered job.
func TestFollowSchedules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		digest, cfg := &recorder{}, &recorder{}
		c := job("cfg", cfg.fn)
		c.Schedule = mustSchedule(t, "*/2 * * * * *")
		reg := prometheus.NewRegistry()
		e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
			Jobs: []JobSpec{c}, Registry: reg,
			Lookup: func(name string) (jobs.Func, bool) { return digest.fn, name == "digest" }})
		if err != nil {
			t.Fatal(err)
		}
		putSchedule(t, st, "t1", "digest", "*/2 * * * * *", `{"v": 1}`)
		putSchedule(t, st, "t2", "digest", "*/3 * * * * *", "")
		putSchedule(t, st, "nobody", "unregistered", "* * * * * *", "")
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(10 * time.Second)
		changed := time.Now()
		putSchedule(t, st, "t1", "digest", "*/5 * * * * *", `{"v": 2}`)
		putSchedule(t, st, "t3", "digest", "*/4 * * * * *", "")
		if _, err := st.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "test",
			Writes: []slotstore.ScheduleWrite{{ID: "t2", Delete: true, IfVersion: slotstore.AnyVersion}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		checkFollowed(t, st, digest, changed)
		if n := len(cfg.snapshot()); n < 14 {
			t.Errorf("the configuration's job ran %d times in 30 s of every 2 s", n)
		}
		if v, n := sumSeries(t, reg, "slotcron_runs_total", "digest"), len(digest.snapshot()); v != float64(n) {
			t.Errorf("runs_total{job_name=digest} is %v, for %d runs of its schedules", v, n)
		}
		if v := sumSeries(t, reg, "slotcron_runs_total", "t1"); v != 0 {
			t.Errorf("a schedule's ID is a job_name label: %v", v)
		}
	})
}

// checkFollowed checks the runs of TestFollowSchedules' schedules around
// changed, the instant of their writes.
func checkFollowed(t *testing.T, st slotstore.Store, digest *recorder, changed time.Time) {
	t.Helper()
	perID := map[string][]started{}
	for _, r := range digest.snapshot() {
		perID[r.run.Job] = append(perID[r.run.Job], r)
	}
	var t1Before, t1After, t3 int
	for _, r := range perID["t1"] {
		var p struct{ V int }
		if err := r.run.Params(&p); err != nil {
			t.Fatal(err)
		}
		switch {
		case !r.run.Slot.After(changed):
			t1Before++
			if r.run.Slot.Second()%2 != 0 || p.V != 1 {
				t.Errorf("t1 before its change ran slot %s with params %d", r.run.Slot, p.V)
			}
		default:
			t1After++
			if r.run.Slot.Second()%5 != 0 || p.V != 2 {
				t.Errorf("t1 after its change ran slot %s with params %d", r.run.Slot, p.V)
			}
		}
	}
	for _, r := range perID["t2"] {
		if r.run.Slot.After(changed) {
			t.Errorf("deleted t2 ran slot %s", r.run.Slot)
		}
	}
	for _, r := range perID["t3"] {
		t3++
		if r.run.Slot.Before(changed) || r.run.Slot.Second()%4 != 0 {
			t.Errorf("t3 ran slot %s", r.run.Slot)
		}
	}
	if t1Before < 4 || t1After < 3 || t3 < 4 || len(perID["t2"]) < 3 || len(perID["nobody"]) != 0 {
		t.Errorf("runs: t1 %d before its change, %d after; t2 %d; t3 %d; nobody %d", t1Before, t1After, len(perID["t2"]),
			t3, len(perID["nobody"]))
	}
	// The first slot after the put runs, though it is due before the
	// replica's next read of the feed may come (every 2 s).
	if first := changed.Truncate(4 * time.Second).Add(4 * time.Second); len(perID["t3"]) == 0 || !perID["t3"][0].run.Slot.Equal(first) {
		t.Errorf("t3's runs %v: its first slot after the put, %s, did not run", perID["t3"], first)
	}
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "nobody"})
	if err != nil || len(ms) != 0 {
		t.Errorf("a schedule of a job no replica registers has markers: %v %v", ms, err)
	}
}

// sumSeries sums the series of metric name in reg whose job_name is job.
func sumSeries(t *testing.T, reg *prometheus.Registry, name, job string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job_name" && l.GetValue() == job {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
