package scheduler

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// sqliteReplica builds a scheduler on the SQLite file it configures, as the
// CLI does: the scheduler opens its store itself.
func sqliteReplica(t *testing.T, path, jobsDoc string, reg *jobs.Registry) *Scheduler {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte("store: {sqlite: {path: "+path+"}}\n"+jobsDoc))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, reg, WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sqliteHistory(t *testing.T, path, job string) []slotstore.Marker {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return history(t, st, job)
}

// Triggers on one Scheduler that opens its own store each open and close
// their own: the second finds no store the first closed.
func TestTriggerTwiceOnOneScheduler(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.db")
	_, _, reg := rig(&recorder{}, "report")
	s := sqliteReplica(t, path, "jobs: {report: {schedule: '@daily', catch_up: none}}", reg)
	for i := range 2 {
		res, err := s.Trigger(context.Background(), "report")
		if err != nil || res.End != "succeeded" {
			t.Fatalf("trigger %d: %+v %v", i+1, res, err)
		}
	}
	if _, err := s.Trigger(context.Background(), "nope"); !errors.Is(err, ErrNoJob) {
		t.Errorf("trigger of an unknown job: %v, want ErrNoJob", err)
	}
	if ms := sqliteHistory(t, path, "report"); len(ms) != 2 {
		t.Fatalf("history has %d runs, want the two triggers'", len(ms))
	}
}

// Triggers while Run runs go through Run's engine and store: they succeed,
// concurrently, and Run goes on claiming with its store open.
func TestTriggerDuringRun(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.db")
	rec := &recorder{sleep: 50 * time.Millisecond}
	_, _, reg := rig(rec, "report", "tick")
	s := sqliteReplica(t, path, `jobs: {report: {schedule: '@daily', catch_up: none}, tick: {schedule: "* * * * * *"}}`, reg)
	stop := start(t, s)
	defer stop()
	ticks := func() int {
		n := 0
		for _, ev := range rec.snapshot() {
			if ev.run.Job == "tick" && ev.finished {
				n++
			}
		}
		return n
	}
	// Run is under way once it has run a slot: from then on triggers go
	// through it (before, each would open the store on its own).
	poll.Until(t, 30*time.Second, "running scheduled slots", func() error { return runsAtLeast(1, ticks()) })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res, err := s.Trigger(context.Background(), "report")
			if err != nil || res.End != "succeeded" {
				t.Errorf("trigger during Run: %+v %v", res, err)
			}
		})
	}
	wg.Wait()
	// Run's store is still open: its scheduled slots go on running.
	before := ticks()
	poll.Until(t, 30*time.Second, "running scheduled slots after the triggers", func() error { return runsAtLeast(before+2, ticks()) })
	stop()
	ms := sqliteHistory(t, path, "report")
	manual := 0
	for _, m := range ms {
		if m.Manual && m.Outcome == slotstore.Succeeded {
			manual++
		}
	}
	if manual != 4 {
		t.Errorf("%d manual runs succeeded in history, want 4: %+v", manual, ms)
	}
	// After Run, a trigger opens the store on its own again.
	if res, err := s.Trigger(context.Background(), "report"); err != nil || res.End != "succeeded" {
		t.Errorf("trigger after Run: %+v %v", res, err)
	}
}

// A Run that fails to start after opening its store (here the HTTP address
// is taken) stops and waits for what it had started before it returns: no
// goroutine of it is left behind to use the store it closed. synctest fails
// the test if one is, blocked, when the bubble's function returns.
func TestRunThatFailsLeavesNothingRunning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	synctest.Test(t, func(t *testing.T) {
		_, _, reg := rig(&recorder{}, "report")
		cfg, err := Parse("test.yaml", []byte("store: {kind: memory}\nhttp: {listen: '"+ln.Addr().String()+"'}\n"+
			"jobs: {report: {schedule: '@daily', catch_up: none}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg, reg, WithLogger(testLogger()))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(context.Background()); err == nil {
			t.Fatal("Run started on an address in use")
		}
	})
}
