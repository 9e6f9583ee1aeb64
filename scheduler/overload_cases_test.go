package scheduler

// max_running against the rest of the engine: cases its first review found
// broken, each failing before it was mended.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// Replica A (max_running 1) is busy with hog; x's slot :10 waits on A and
// is overtaken by :20. Its starting window (45 s) is open until :55 by the
// store's clock, and replica B (room to spare, clock 15 s behind, within
// what guarantee 7 protects) tries it at store time :25: A records nothing
// before the window closes, and B runs it.
func TestOvertakenSlotIsLeftToAReplicaWithRoomUntilItsWindowCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now().Truncate(time.Minute)
		var mu sync.Mutex
		ranBy := map[string]string{}
		reg := jobs.NewRegistry()
		reg.Register("hog", waiter(50*time.Second))
		reg.Register("x", func(ctx context.Context, run jobs.Run) error {
			mu.Lock()
			ranBy[run.Slot.UTC().Format("15:04:05")] = run.Replica
			mu.Unlock()
			return nil
		})
		st := memstore.New(memstore.Options{})
		until := base.Add(40 * time.Second).Format(time.RFC3339)
		conf := func(max string) string {
			return "max_running: " + max + "\nshutdown_grace: 1s\ndefaults: {catch_up: none}\n" +
				"jobs: {hog: {schedule: '5 * * * * *', active: {until: '" + until + "'}}, x: {schedule: '*/10 * * * * *', starting_deadline: 45s, active: {until: '" + until + "'}}}"
		}
		stopA := start(t, replica(t, st, "a", conf("1"), reg))
		stopB := start(t, replica(t, st, "b", conf("100"), reg, WithClock(func() time.Time { return time.Now().Add(-15 * time.Second) })))
		time.Sleep(90 * time.Second)
		synctest.Wait()
		stopAll(stopA, stopB)
		for _, m := range history(t, st, "x") {
			t.Logf("x %s state=%s reason=%q holder=%s", m.Slot.UTC().Format("15:04:05"), m.State, m.Reason, m.Holder)
			if m.Reason == "missed: overloaded" && m.Slot.Equal(base.Add(10*time.Second)) {
				t.Errorf("x@:10 recorded %q by %s while its window was open by the store's clock and replica b had room", m.Reason, m.Holder)
			}
		}
		for _, m := range history(t, st, "hog") {
			t.Logf("hog %s state=%s holder=%s", m.Slot.UTC().Format("15:04:05"), m.State, m.Holder)
		}
		t.Logf("ran: %v", ranBy)
	})
}

// catch_up: all at start-up: 10 slots of one job due at once, max_running 4,
// runs instant. Four start at once and the rest wait their turn: the slots
// of one catch-up do not overtake each other.
func TestCatchUpAllIsNotCollapsedByTheCap(t *testing.T) {
	for _, max := range []string{"4", "100"} {
		t.Run(max, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var ran atomic.Int32
				reg := jobs.NewRegistry()
				reg.Register("x", func(ctx context.Context, run jobs.Run) error { ran.Add(1); return nil })
				st := memstore.New(memstore.Options{})
				conf := "max_running: " + max + "\nshutdown_grace: 1s\ndefaults: {catch_up: all, catch_up_limit: 10, starting_deadline: 30s}\n" +
					"jobs: {x: {schedule: '* * * * * *'}}"
				stop := start(t, replica(t, st, "a", conf, reg))
				time.Sleep(3 * time.Second)
				synctest.Wait()
				stop()
				time.Sleep(20 * time.Second) // every replica down
				ran.Store(0)
				stop = start(t, replica(t, st, "a", conf, reg))
				time.Sleep(500 * time.Millisecond)
				synctest.Wait()
				stop()
				over := 0
				for _, m := range history(t, st, "x") {
					if m.Reason == "missed: overloaded" {
						over++
					}
				}
				t.Logf("max_running %s: %d runs after restart, %d recorded missed: overloaded", max, ran.Load(), over)
				if over > 0 {
					t.Errorf("max_running %s: %d catch-up slots recorded overloaded with room for 4 at once and instant runs", max, over)
				}
			})
		})
	}
}

// max_running 2: f fails at :00 (retry due :02); h1 (:00) and h2 (:01) run
// 60 s. The retry is not held back for room, which it would find only
// after its window closes (:30): the slot ends done, not retrying for good.
func TestRetryOfAFailedRunIsNotHeldBackByTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now().Truncate(time.Minute)
		reg := jobs.NewRegistry()
		hog := func(ctx context.Context, run jobs.Run) error {
			select {
			case <-ctx.Done():
			case <-time.After(60 * time.Second):
			}
			return nil
		}
		reg.Register("h1", hog)
		reg.Register("h2", hog)
		reg.Register("f", func(ctx context.Context, run jobs.Run) error { return errors.New("boom") })
		st := memstore.New(memstore.Options{})
		until := base.Add(70 * time.Second).Format(time.RFC3339)
		conf := "max_running: 2\nshutdown_grace: 1s\ndefaults: {catch_up: none, starting_deadline: 30s}\n" +
			"jobs: {f: {schedule: '0 * * * * *', retries: {max: 1, backoff: 2s}, active: {until: '" + until + "'}}, " +
			"h1: {schedule: '0 * * * * *', active: {until: '" + until + "'}}, h2: {schedule: '1 * * * * *', active: {until: '" + until + "'}}}"
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		stop()
		for _, m := range history(t, st, "f") {
			t.Logf("f@%s state=%s outcome=%s attempt=%d reason=%q", m.Slot.UTC().Format("15:04:05"), m.State, m.Outcome, m.Attempt, m.Reason)
			if m.Slot.Equal(base.Add(60*time.Second)) && m.State == "retrying" {
				t.Errorf("f@%s: still %q two minutes on: no final record", m.Slot.UTC().Format("15:04:05"), m.State)
			}
		}
	})
}

// A slot waiting for room when a reload changes its job is recorded once
// its window closes, under the job's new spec, if it never ran.
func TestReloadKeepsTheRecordOfAWaitingSlot(t *testing.T) {
	for _, reload := range []bool{false, true} {
		name := "noreload"
		if reload {
			name = "reload"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := time.Now().Truncate(time.Minute)
				reg := jobs.NewRegistry()
				reg.Register("hog", waiter(50*time.Second))
				reg.Register("x", func(ctx context.Context, run jobs.Run) error { return nil })
				st := memstore.New(memstore.Options{})
				until := base.Add(15 * time.Second).Format(time.RFC3339)
				conf := func(timeout string) string {
					return "max_running: 1\nshutdown_grace: 1s\ndefaults: {catch_up: none}\n" +
						"jobs: {hog: {schedule: '5 * * * * *', active: {until: '" + until + "'}}, x: {schedule: '*/10 * * * * *', timeout: " + timeout + ", starting_deadline: 45s, active: {until: '" + until + "'}}}"
				}
				s := replica(t, st, "a", conf("10m"), reg)
				stop := start(t, s)
				time.Sleep(12 * time.Second)
				if reload {
					cfg, err := Parse("test.yaml", []byte(conf("5m")))
					if err != nil {
						t.Fatal(err)
					}
					cfg.Replica = "a"
					if _, err := s.Reload(context.Background(), cfg); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(58*time.Second - time.Since(base))
				synctest.Wait()
				found := false
				for _, m := range history(t, st, "x") {
					t.Logf("at :58 x %s state=%s reason=%q", m.Slot.UTC().Format("15:04:05"), m.State, m.Reason)
					found = found || m.Slot.Equal(base.Add(10*time.Second))
				}
				if !found {
					t.Errorf("x@:10 neither ran nor was recorded once its window closed (:55)")
				}
				time.Sleep(3 * time.Minute)
				synctest.Wait()
				stop()
				for _, m := range history(t, st, "x") {
					t.Logf("at 4m x %s state=%s reason=%q", m.Slot.UTC().Format("15:04:05"), m.State, m.Reason)
				}
			})
		})
	}
}

// A paused job's slot that finds no room is recorded "paused", not missed
// for the overload.
func TestPausedSlotWithNoRoomIsRecordedPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now().Truncate(time.Minute)
		reg := jobs.NewRegistry()
		reg.Register("hog", waiter(50*time.Second))
		reg.Register("x", func(ctx context.Context, run jobs.Run) error { return nil })
		st := memstore.New(memstore.Options{})
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: "x", Paused: true, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		until := base.Add(15 * time.Second).Format(time.RFC3339)
		conf := "max_running: 1\nshutdown_grace: 1s\ndefaults: {catch_up: none, starting_deadline: 5s}\n" +
			"jobs: {hog: {schedule: '5 * * * * *', active: {until: '" + until + "'}}, x: {schedule: '*/10 * * * * *', active: {until: '" + until + "'}}}"
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		stop()
		for _, m := range history(t, st, "x") {
			t.Logf("x@%s state=%s reason=%q", m.Slot.UTC().Format("15:04:05"), m.State, m.Reason)
			if m.Reason == "missed: overloaded" {
				t.Errorf("x@%s of a paused job recorded %q", m.Slot.UTC().Format("15:04:05"), m.Reason)
			}
		}
	})
}

// The same schedule written through the replica's HTTP API (s.cfg, kept)
// and through the CLI / OpenSchedules (the whole configuration) gets the
// same defaults, a retries.backoff written 0s included.
func TestScheduleDefaultsAreTheSameThroughTheKeptConfig(t *testing.T) {
	doc := "defaults: {retries: {max: 2, backoff: 0s}}\njobs:\n  a: {schedule: '@hourly', run: hello}\n"
	reg := demoRegistry()
	st := memstore.New(memstore.Options{})
	s := replica(t, st, "r", doc, reg)
	ctx := context.Background()
	if _, err := s.httpSchedules(st).Put(ctx, Schedule{ID: "via-http", Job: "hello", Schedule: "@hourly"}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := Parse("test.yaml", []byte(doc))
	if _, err := NewSchedules(st, cfg, reg).Put(ctx, Schedule{ID: "via-cli", Job: "hello", Schedule: "@hourly"}); err != nil {
		t.Fatal(err)
	}
	h, _ := NewSchedules(st, cfg, reg).Get(ctx, "via-http")
	c, _ := NewSchedules(st, cfg, reg).Get(ctx, "via-cli")
	t.Logf("http: backoff %v; cli: backoff %v", h.Policy.Retries.Backoff, c.Policy.Retries.Backoff)
	if h.Policy.Retries.Backoff != c.Policy.Retries.Backoff {
		t.Errorf("the same schedule stored with backoff %v through the HTTP API and %v through the CLI", h.Policy.Retries.Backoff, c.Policy.Retries.Backoff)
	}
}

// waiter is a job that runs for d, or until its context ends.
func waiter(d time.Duration) jobs.Func {
	return func(ctx context.Context, _ jobs.Run) error {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		return nil
	}
}
