package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// putRuns writes n schedules of run, IDs prefix0000…, on spec.
func putRuns(t *testing.T, st slotstore.Store, prefix, run, spec string, n int) {
	t.Helper()
	var ws []slotstore.ScheduleWrite
	for i := range n {
		j := job(fmt.Sprintf("%s%04d", prefix, i), nil)
		j.Run, j.Schedule, j.Deadline = run, mustSchedule(t, spec), 5*time.Second
		j.OnCrash, j.Overlap, j.CatchUp = policy.OnCrashRetry, policy.OverlapAllow, policy.CatchUpLatest
		ws = append(ws, slotstore.ScheduleWrite{ID: j.Name, Run: run, Spec: ScheduleSpec(j), IfVersion: slotstore.AnyVersion})
	}
	if _, err := st.WriteSchedules(context.Background(), slotstore.WriteSchedulesParams{By: "test", Writes: ws}); err != nil {
		t.Fatal(err)
	}
}

// slowReads is a store whose pages of schedules take a second each, and
// whose enrolments take half a second.
type slowReads struct{ slotstore.Store }

func (s slowReads) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	time.Sleep(time.Second)
	return s.Store.Schedules(ctx, p)
}

func (s slowReads) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	time.Sleep(500 * time.Millisecond)
	return s.Store.Enroll(ctx, p)
}

// startEngine builds replica "a" with cfg's jobs, running the registered
// job "digest" with digest, and reading pages of page schedules.
func startEngine(t *testing.T, digest *recorder, page int, cfg ...JobSpec) *Engine {
	t.Helper()
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: cfg, Lookup: func(name string) (jobs.Func, bool) { return digest.fn, name == "digest" }})
	if err != nil {
		t.Fatal(err)
	}
	e.follow.page = page
	return e
}

// TestStartUpServesBetweenPages: while a start-up reads pages of
// schedules this binary does not run, the every-second schedules of the
// first page keep running, a slot a second.
func TestStartUpServesBetweenPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Hour).Add(time.Hour + 10*time.Minute)))
		putRuns(t, mem, "a", "digest", "* * * * * *", 10)
		putRuns(t, mem, "b", "other", "0 0 * * * *", 70) // seven pages of another binary's
		digest := &recorder{}
		cfg := job("cfg", nil)
		cfg.Schedule = mustSchedule(t, "0 0 0 1 1 *")
		e := startEngine(t, digest, 10, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: slowReads{mem}}) }()
		time.Sleep(12 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		var slots []time.Time
		for _, r := range digest.snapshot() {
			if r.run.Job == "a0000" {
				slots = append(slots, r.run.Slot)
			}
		}
		slices.SortFunc(slots, time.Time.Compare)
		if len(slots) < 8 {
			t.Fatalf("a0000 ran %d slots in 12 s of every second: %v", len(slots), slots)
		}
		for i := 1; i < len(slots); i++ {
			if gap := slots[i].Sub(slots[i-1]); gap > time.Second {
				t.Errorf("a0000 ran %v, then %v: the slots between were not run", slots[i-1], slots[i])
			}
		}
	})
}

// TestReloadDuringStartUp: a Reload made while the start-up reads and
// enrolls the schedules waits for it to end, then applies; neither blocks
// the other.
func TestReloadDuringStartUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Hour).Add(time.Hour + 10*time.Minute)))
		putRuns(t, mem, "s", "digest", "0 0 * * * *", 30)
		digest := &recorder{}
		cfg := job("cfg", nil)
		cfg.Schedule = mustSchedule(t, "0 0 0 1 1 *")
		e := startEngine(t, digest, 10, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: slowReads{mem}}) }()
		time.Sleep(1500 * time.Millisecond) // within the start-up: pages of a second, enrolments of half
		cfg2 := job("cfg2", nil)
		cfg2.Schedule = cfg.Schedule
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := e.Reload(rctx, mem, []JobSpec{cfg, cfg2}, 0)
		rcancel()
		if err != nil || !slices.Equal(r.Added, []string{"cfg2"}) {
			t.Errorf("a Reload during the start-up: %+v, %v", r, err)
		}
		for i := range 30 {
			if id := fmt.Sprintf("s%04d", i); e.jobs().plan(id) == nil {
				t.Errorf("%s not in the plan set after the start-up and the Reload", id)
			}
		}
		if e.jobs().plan("cfg2") == nil {
			t.Error("the Reload's job is not in the plan set")
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}
