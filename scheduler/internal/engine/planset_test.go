package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// heldSet is a set of n schedule plans.
func heldSet(n int) *planSet {
	repl := make(map[string]*plan, n)
	for i := range n {
		name := fmt.Sprintf("tenant-%06d", i)
		repl[name] = &plan{name: name, run: "digest"}
	}
	s, _ := newPlanSet(nil, 0, nil)
	s, _, _ = s.withSchedules(repl)
	return s
}

// TestPlanSetShards: a change replaces, adds and removes schedules in a
// new set and leaves the set it came from as it was; a job of the
// configuration shadows a schedule of its name.
func TestPlanSetShards(t *testing.T) {
	s := heldSet(1000)
	repl := map[string]*plan{"tenant-000001": nil, "tenant-000002": {name: "tenant-000002", run: "other"}, "new": {name: "new", run: "digest"}}
	next, fresh, gone := s.withSchedules(repl)
	if next.nHeld != 1000 || len(fresh) != 2 || len(gone) != 2 {
		t.Fatalf("after the change: %d held, %d fresh, %d gone", next.nHeld, len(fresh), len(gone))
	}
	if next.plan("tenant-000001") != nil || next.plan("tenant-000002").run != "other" || next.plan("new") == nil {
		t.Fatal("the change is not in the new set")
	}
	if s.nHeld != 1000 || s.plan("tenant-000001") == nil || s.plan("tenant-000002").run != "digest" || s.plan("new") != nil {
		t.Fatal("the change leaked into the set it came from")
	}
	if n := len(next.schedules()); n != 1000 {
		t.Fatalf("%d schedules listed, want 1000", n)
	}
	j := job("new", nil)
	withJob, shadowed := next.withConfig([]*plan{newPlan(j, slotstore.Spec{Fingerprint: "f"})}, 0)
	if len(shadowed) != 1 || withJob.plan("new").run != "" || withJob.nHeld != 999 || next.plan("new").run != "digest" {
		t.Fatalf("a job of the configuration named like a schedule: shadowed %d, %d held", len(shadowed), withJob.nHeld)
	}
}

// BenchmarkScheduleChange is the cost of taking in one changed schedule
// among 100,000: a new set with one shard copied.
func BenchmarkScheduleChange(b *testing.B) {
	s := heldSet(100000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("tenant-%06d", i%100000)
		s, _, _ = s.withSchedules(map[string]*plan{name: {name: name, run: "digest"}})
	}
}

// The jobs of a plan set get the spec SpecOf gives each alone, though jobs
// of one body share its making: every field BodyOf reads tells two jobs'
// specs apart.
func TestPlanSetSpecsAreEachJobsOwn(t *testing.T) {
	every, err := schedule.Parse("@every 10s", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	other, err := schedule.Parse("@every 10s", "UTC") // the same text, another parse
	if err != nil {
		t.Fatal(err)
	}
	base := JobSpec{Name: "a", Schedule: every, Lease: time.Minute, Timeout: time.Hour, Deadline: time.Minute,
		History: time.Hour, CatchUp: policy.CatchUpLatest, Overlap: policy.OverlapAllow, OnCrash: policy.OnCrashRetry}
	variants := []func(*JobSpec){
		func(*JobSpec) {},
		func(j *JobSpec) { j.Schedule = other },
		func(j *JobSpec) { j.Run = "r" },
		func(j *JobSpec) { j.Run, j.Params = "r", []byte(`{"a":1}`) },
		func(j *JobSpec) { j.Lease = 2 * time.Minute },
		func(j *JobSpec) { j.Timeout = time.Minute },
		func(j *JobSpec) { j.Deadline = 2 * time.Minute },
		func(j *JobSpec) { j.History = 2 * time.Hour },
		func(j *JobSpec) { j.Jitter = time.Second },
		func(j *JobSpec) { j.Run, j.JitterWindow = "r", 5*time.Second },
		func(j *JobSpec) { j.OnCrash = policy.OnCrashSkip },
		func(j *JobSpec) { j.AfterDataLoss = policy.AfterDataLossRun },
		func(j *JobSpec) { j.CatchUp = policy.CatchUpAll },
		func(j *JobSpec) { j.Overlap = policy.OverlapForbid },
		func(j *JobSpec) { j.MaxAttempts = 7 },
		func(j *JobSpec) { j.CatchUpLimit = 3 },
		func(j *JobSpec) { j.PauseAfterFailures = 2 },
		func(j *JobSpec) { j.MaxRuns = 9 },
		func(j *JobSpec) { j.Retries = Retries{Max: 1, Backoff: time.Second} },
		func(j *JobSpec) { j.Params = []byte("x: 1\n") },
		func(j *JobSpec) { j.Params = []byte{} },
		func(j *JobSpec) { j.Params, j.ParamsWritten = []byte("x: 1\n"), []byte("x: ${X}\n") },
		func(j *JobSpec) { j.Except = []Calendar{{Name: "h", Dates: []string{"2026-12-24"}}} },
	}
	var specs []JobSpec
	for i, v := range variants {
		for k := range 2 { // each twice: the second shares the first's making
			j := base
			j.Name = fmt.Sprintf("job-%02d-%d", i, k)
			v(&j)
			specs = append(specs, j)
		}
	}
	set, _ := newPlanSet(specs, 7, nil)
	seen := map[string]string{}
	for i, p := range set.plans {
		want := SpecOf(specs[i], 7)
		if p.spec.Fingerprint != want.Fingerprint || string(p.spec.Body) != string(want.Body) || p.spec.Revision != 7 {
			t.Errorf("%s: spec %s, want %s", p.name, p.spec.Fingerprint, want.Fingerprint)
		}
		seen[want.Fingerprint] = p.name
	}
	if len(seen) != len(variants)-1 { // another parse of the same text is the same spec
		t.Errorf("%d distinct specs of %d variants, want %d", len(seen), len(variants), len(variants)-1)
	}
}
