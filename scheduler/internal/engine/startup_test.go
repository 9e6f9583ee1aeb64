package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// slowEnrolls is a store whose enrolments take a while, that records which
// jobs each enrolled and when, and checks that no claim precedes its job's
// enrolment.
type slowEnrolls struct {
	slotstore.Store
	t        *testing.T
	mu       sync.Mutex
	enrolled map[string]time.Time // when each job's first enrolment answered
	calls    [][]string           // the jobs of each enrolment, in order
	lastAt   time.Time            // when the last enrolment answered
	claimed  time.Time            // the first claim
}

func (s *slowEnrolls) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	time.Sleep(time.Second)
	gens, err := s.Store.Enroll(ctx, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, append([]string(nil), p.Jobs...))
	for _, j := range p.Jobs {
		if _, ok := s.enrolled[j]; !ok {
			s.enrolled[j] = time.Now()
		}
	}
	s.lastAt = time.Now()
	return gens, err
}

func (s *slowEnrolls) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	s.mu.Lock()
	for _, r := range p.Requests {
		if _, ok := s.enrolled[r.Job]; !ok {
			s.t.Errorf("%s claimed (slot %v) before its enrolment answered", r.Job, r.Slot)
		}
	}
	if s.claimed.IsZero() {
		s.claimed = time.Now()
	}
	s.mu.Unlock()
	return s.Store.Claim(ctx, p)
}

// TestStartUpInDueOrder: a start-up enrolls and schedules the jobs a batch
// at a time, those due soonest first, and runs what comes due meanwhile:
// with enrolments of a second each and schedules read in pages, the
// every-second schedules run while the hourly ones are still being
// enrolled, no claim precedes its job's enrolment, and once the start-up
// ends every schedule is enrolled and scheduled.
func TestStartUpInDueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New(memstore.Options{})
		st := &slowEnrolls{Store: mem, t: t, enrolled: map[string]time.Time{}}
		time.Sleep(time.Until(time.Now().Truncate(time.Hour).Add(time.Hour + 10*time.Minute)))
		var ws []slotstore.ScheduleWrite
		often := map[string]bool{}
		for i := range 2500 {
			id, spec := fmt.Sprintf("t%04d", i), "0 0 * * * *"
			if i%100 == 7 {
				spec = "* * * * * *"
				often[id] = true
			}
			j := job(id, nil)
			j.Run, j.Schedule, j.Deadline = "digest", mustSchedule(t, spec), 5*time.Second
			j.OnCrash, j.Overlap, j.CatchUp = policy.OnCrashRetry, policy.OverlapAllow, policy.CatchUpLatest
			ws = append(ws, slotstore.ScheduleWrite{ID: id, Run: "digest", Spec: ScheduleSpec(j), IfVersion: slotstore.AnyVersion})
		}
		for len(ws) > 0 {
			n := min(len(ws), slotstore.MaxScheduleWrites)
			if _, err := mem.WriteSchedules(context.Background(), slotstore.WriteSchedulesParams{By: "test", Writes: ws[:n]}); err != nil {
				t.Fatal(err)
			}
			ws = ws[n:]
		}
		digest := &recorder{}
		cfg := job("cfg", nil) // a job of the configuration, with no slot in the test
		cfg.Schedule = mustSchedule(t, "0 0 0 1 1 *")
		e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
			Jobs:   []JobSpec{cfg},
			Lookup: func(name string) (jobs.Func, bool) { return digest.fn, name == "digest" }})
		if err != nil {
			t.Fatal(err)
		}
		e.follow.page = 700 // four pages, taken in after the first, then as many more as the set holds
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		began := time.Now()
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(30 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}

		st.mu.Lock()
		defer st.mu.Unlock()
		for i := range 2500 {
			id := fmt.Sprintf("t%04d", i)
			if _, ok := st.enrolled[id]; !ok {
				t.Errorf("%s never enrolled", id)
			}
			if e.jobs().plan(id) == nil {
				t.Errorf("%s not in the plan set", id)
			}
		}
		// The every-second schedules of each group taken in lead its
		// enrolments: the first page's seven in the first batch of
		// schedules.
		if len(st.calls) < 4 {
			t.Fatalf("%d enrolments for a job of the configuration and 2,500 schedules", len(st.calls))
		}
		first := st.calls[1]
		for _, j := range first[:min(len(first), 7)] {
			if !often[j] {
				t.Errorf("the first schedules enrolled begin with %s, not an every-second one: %v", j, first[:min(len(first), 7)])
			}
		}
		if !st.claimed.Before(st.lastAt) {
			t.Errorf("first claim at %v, after the last enrolment answered at %v: the start-up waited for every job",
				st.claimed.Sub(began), st.lastAt.Sub(began))
		}
		runs := digest.snapshot()
		early := 0
		for _, r := range runs {
			if !often[r.run.Job] {
				t.Errorf("%s ran at %v: an hourly schedule with no slot in the test", r.run.Job, r.run.Slot)
			}
			if r.at.Before(st.lastAt) {
				early++
			}
		}
		if early == 0 {
			t.Errorf("no run before the start-up ended (%v after Run); %d runs", st.lastAt.Sub(began), len(runs))
		}
	})
}
