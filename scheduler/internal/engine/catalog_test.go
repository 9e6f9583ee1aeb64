package engine

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// replicaOf is one engine of a catalog test, running on st until stop.
type replicaOf struct {
	e    *Engine
	logs *testlog.Buffer
	rec  *recorder
	stop context.CancelFunc
	done chan error
}

// startReplica runs replica name with job hello on spec, in its own
// goroutine, on st.
func startReplica(t *testing.T, st slotstore.Store, name, spec string, revision int64) *replicaOf {
	t.Helper()
	sched, err := schedule.Parse(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	r := &replicaOf{logs: &testlog.Buffer{}, rec: &recorder{}, done: make(chan error, 1)}
	j := job("hello", r.rec.fn)
	j.Schedule, j.Deadline = sched, 5*time.Second
	r.e, err = New(Config{Replica: name, Incarnation: name, Log: slog.New(slog.NewJSONHandler(r.logs, nil)), Now: time.Now,
		Grace: time.Second, Jobs: []JobSpec{j}, Revision: revision, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- r.e.Run(ctx, RunParams{Store: st}) }()
	return r
}

func (r *replicaOf) shutdown(t *testing.T) {
	t.Helper()
	r.stop()
	if err := <-r.done; err != nil {
		t.Errorf("%s: Run: %v", r.e.replica, err)
	}
}

// conflicted returns the replica's slotcron_job_spec_conflict for hello (0
// for a job that has no series).
func (r *replicaOf) conflicted() float64 {
	return gaugeValue(r.e.metrics.specConflict.WithLabelValues("hello"))
}

// slotsAfter lists the slots of hello's markers after t, oldest first.
func slotsAfter(t *testing.T, st slotstore.Store, after time.Time) []time.Time {
	t.Helper()
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "hello", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Slot.After(after) {
			out = append(out, ms[i].Slot)
		}
	}
	return out
}

// TestSpecConflictTwoSchedules: the deploy that changes hello from every 2
// s to every 3 s while an old replica still runs. Once the new replica
// enrolls, history holds only the new schedule's slots, each once; the
// old replica says so at WARN, once, with both fingerprints and what
// differs, and its gauge is 1.
func TestSpecConflictTwoSchedules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		old := startReplica(t, st, "old", "*/2 * * * * *", 0)
		time.Sleep(5 * time.Second)
		switched := time.Now()
		fresh := startReplica(t, st, "new", "*/3 * * * * *", 0)
		time.Sleep(12 * time.Second)
		fresh.shutdown(t)
		old.shutdown(t)

		after := slotsAfter(t, st, switched)
		if len(after) < 3 {
			t.Fatalf("slots after the switch: %v", after)
		}
		for _, s := range after {
			if s.Second()%3 != 0 {
				t.Errorf("slot %s after the switch is not of the schedule in force", s.Format(time.RFC3339))
			}
		}
		if before := slotsAfter(t, st, switched.Add(-5*time.Second)); len(before) <= len(after) {
			t.Errorf("the old schedule ran nothing before the switch: %v", before)
		}
		warns := old.logs.Logged(t, "job's spec is not the spec in force; not claiming its slots")
		if len(warns) != 1 {
			t.Fatalf("%d conflict lines on the old replica, want 1:\n%s", len(warns), old.logs.String())
		}
		w := warns[0]
		own, inForce := old.e.jobs().plans[0].spec.Fingerprint, fresh.e.jobs().plans[0].spec.Fingerprint
		if w["level"] != "WARN" || w["spec"] != own || w["in_force"] != inForce || w["in_force_by"] != "new" ||
			!strings.Contains(w["differs"].(string), `schedule: "*/2 * * * * *" → "*/3 * * * * *"`) {
			t.Errorf("conflict line: %v", w)
		}
		if g := old.conflicted(); g != 1 {
			t.Errorf("old replica's slotcron_job_spec_conflict = %v, want 1", g)
		}
		if g := fresh.conflicted(); g != 0 {
			t.Errorf("new replica's slotcron_job_spec_conflict = %v, want 0", g)
		}
		if n := len(fresh.logs.Logged(t, "job's spec is not the spec in force; not claiming its slots")); n != 0 {
			t.Errorf("the new replica logged %d conflicts", n)
		}
	})
}

// TestSpecRollbackTakesForce: an old replica restarting during a rollout
// does not switch the job back (it says at start-up that its job is in
// conflict); once the new replica is gone (a rollback
// that replaced it), the old spec takes force again and its slots run.
func TestSpecRollbackTakesForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		a := startReplica(t, st, "a", "*/2 * * * * *", 0)
		time.Sleep(3 * time.Second)
		b := startReplica(t, st, "b", "*/3 * * * * *", 0)
		time.Sleep(3 * time.Second)
		a.shutdown(t)
		back := startReplica(t, st, "a2", "*/2 * * * * *", 0) // a crash-looping old replica
		time.Sleep(7 * time.Second)
		if g := back.conflicted(); g != 1 {
			t.Fatalf("a restarted old replica: slotcron_job_spec_conflict = %v, want 1", g)
		}
		if l := back.logs.Logged(t, "jobs enrolled"); len(l) != 1 || l[0]["jobs"] != float64(1) || l[0]["in_conflict"] != float64(1) {
			t.Errorf("the restarted old replica's enrolment lines: %v, want one saying 1 job, 1 in conflict", l)
		}
		for _, s := range slotsAfter(t, st, time.Now().Add(-6*time.Second)) {
			if s.Second()%3 != 0 {
				t.Errorf("slot %s of the old schedule ran while the new replica lived", s.Format(time.RFC3339))
			}
		}
		b.shutdown(t)
		gone := time.Now()
		time.Sleep(2*catalogEvery + 3*time.Second)
		if g := back.conflicted(); g != 0 {
			t.Fatalf("after the new replica left: slotcron_job_spec_conflict = %v, want 0:\n%s", g, back.logs.String())
		}
		evens := 0
		for _, s := range slotsAfter(t, st, gone.Add(catalogEvery+time.Second)) {
			if s.Second()%2 == 0 {
				evens++
			}
		}
		if evens == 0 {
			t.Errorf("the old schedule did not run again after the rollback")
		}
		back.shutdown(t)
	})
}
