package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Three replicas started at different moments share a per-second schedule:
// every slot runs exactly once, fences grow with the slots.
func TestReplicasRunEverySlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		st, rec, reg := rig(&recorder{sleep: 300 * time.Millisecond}, "tick")
		conf := `jobs: {tick: {schedule: "*/1 * * * * *", lease: 2s}}`

		var stops []func()
		for i, delay := range []time.Duration{0, 1300 * time.Millisecond, 1400 * time.Millisecond} {
			time.Sleep(delay)
			stops = append(stops, start(t, replica(t, st, fmt.Sprintf("r%d", i), conf, reg)))
		}
		// Before the next slot is claimed, ahead of its instant.
		time.Sleep(time.Until(t0.Add(20*time.Second + 250*time.Millisecond)))
		for _, stop := range stops {
			stop()
		}

		evs := rec.snapshot()
		seen := map[time.Time]int{}
		replicas := map[string]int{}
		for i, ev := range evs {
			seen[ev.run.Slot]++
			replicas[ev.run.Replica]++
			if i > 0 && !ev.run.Slot.After(evs[i-1].run.Slot) {
				t.Errorf("fence %d has slot %v, not after fence %d's %v", ev.run.Fence, ev.run.Slot, evs[i-1].run.Fence, evs[i-1].run.Slot)
			}
			if ev.run.Attempt != 1 || !ev.finished {
				t.Errorf("run %s: attempt %d finished %v", ev.run.Key(), ev.run.Attempt, ev.finished)
			}
		}
		for s := t0; !s.After(t0.Add(20 * time.Second)); s = s.Add(time.Second) {
			if seen[s.UTC()] != 1 {
				t.Errorf("slot %v ran %d times, want 1", s.UTC(), seen[s.UTC()])
			}
		}
		if len(evs) != 21 {
			t.Errorf("%d runs, want 21", len(evs))
		}
		if len(replicas) < 2 {
			t.Errorf("runs were spread over %v; want several replicas to win", replicas)
		}
		hist, err := st.History(context.Background(), slotstore.HistoryParams{Job: "tick", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range hist {
			if m.State != slotstore.StateDone || m.Outcome != slotstore.Succeeded {
				t.Errorf("marker %v: state %s outcome %s", m.Slot, m.State, m.Outcome)
			}
		}
	})
}

// A holder cut off from the store cancels its job when its trust window
// ends, before the other replica takes the slot over with a higher fence.
func TestTakeoverAfterHolderCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 10 * time.Second}, "long")
		conf := `jobs: {long: {schedule: "@every 1h", lease: 3s}}`
		cutoff := &flaky{Store: st}
		stopA := start(t, replica(t, cutoff, "a", conf, reg))
		synctest.Wait() // a has claimed the slot due now
		stopB := start(t, replica(t, st, "b", conf, reg))

		time.Sleep(500 * time.Millisecond)
		cut := time.Now()
		cutoff.cut(true)
		time.Sleep(15 * time.Second)
		stopA()
		stopB()

		evs := rec.snapshot()
		if len(evs) != 2 {
			t.Fatalf("%d runs, want 2: %+v", len(evs), evs)
		}
		a, b := evs[0], evs[1]
		if a.run.Replica != "a" || !errors.Is(a.cause, engine.ErrLeaseLost) {
			t.Errorf("first run on %s ended with %v, want a cancelled by lease loss", a.run.Replica, a.cause)
		}
		if b.run.Replica != "b" || b.run.Attempt != 2 || b.run.Fence <= a.run.Fence || !b.finished {
			t.Errorf("takeover run: replica %s attempt %d fence %d (first %d) finished %v",
				b.run.Replica, b.run.Attempt, b.run.Fence, a.run.Fence, b.finished)
		}
		if !a.ended.Before(b.started) {
			t.Errorf("holder ended at %v, successor started at %v: the holder must stop first", a.ended, b.started)
		}
		// The last successful renewal was sent before the cut; the takeover
		// must come within one lease plus one renewal interval of it.
		if late := b.started.Sub(cut); late > 3*time.Second+time.Second {
			t.Errorf("takeover %v after the cut, want within lease + lease/3", late)
		}
		hist, err := st.History(context.Background(), slotstore.HistoryParams{Job: "long"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 1 || hist[0].Holder != "b" || hist[0].Outcome != slotstore.Succeeded || hist[0].Attempt != 2 {
			t.Errorf("history %+v", hist)
		}
	})
}

// A job far longer than its lease keeps the slot as long as renewals work.
func TestRenewalKeepsLongRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 20 * time.Second}, "long")
		conf := `jobs: {long: {schedule: "@every 1h", lease: 1s}}`
		stopA := start(t, replica(t, st, "a", conf, reg))
		synctest.Wait()
		stopB := start(t, replica(t, st, "b", conf, reg))
		time.Sleep(25 * time.Second)
		stopA()
		stopB()
		evs := rec.snapshot()
		if len(evs) != 1 || !evs[0].finished || evs[0].run.Replica != "a" {
			t.Fatalf("runs %+v, want one finished run on a", evs)
		}
	})
}

// On shutdown a running job gets the grace period, then is cancelled and its
// slot released: another replica takes it over within a renewal interval,
// not a whole lease.
func TestShutdownReleasesRunningSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: time.Minute}, "long")
		conf := "shutdown_grace: 1s\njobs: {long: {schedule: \"@every 1h\", lease: 30s}}"
		stopA := start(t, replica(t, st, "a", conf, reg))
		synctest.Wait()
		stopB := start(t, replica(t, st, "b", conf, reg))
		time.Sleep(2 * time.Second)
		stopA() // returns after the grace, the cancellation and the release
		released := time.Now()
		time.Sleep(11 * time.Second)
		evs := rec.snapshot()
		stopB()

		if len(evs) != 2 {
			t.Fatalf("%d runs, want 2", len(evs))
		}
		if !errors.Is(evs[0].cause, engine.ErrShutdown) {
			t.Errorf("first run ended with %v, want shutdown", evs[0].cause)
		}
		if wait := evs[1].started.Sub(released); evs[1].run.Replica != "b" || wait > 10*time.Second {
			t.Errorf("second run on %s began %v after the release, want b within lease/3", evs[1].run.Replica, wait)
		}
	})
}

func TestOutcomesInHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		reg := jobs.NewRegistry()
		reg.Register("ok", func(ctx context.Context, run jobs.Run) error { return nil })
		reg.Register("bad", func(ctx context.Context, run jobs.Run) error { return errors.New("disk full") })
		reg.Register("slow", func(ctx context.Context, run jobs.Run) error { <-ctx.Done(); return ctx.Err() })
		reg.Register("boom", func(ctx context.Context, run jobs.Run) error { panic("nil map") })
		conf := `
jobs:
  ok:   {schedule: "@every 1h"}
  bad:  {schedule: "@every 1h"}
  slow: {schedule: "@every 1h", timeout: 2s}
  boom: {schedule: "@every 1h"}
`
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(5 * time.Second)
		stop()
		want := map[string]struct {
			outcome slotstore.Outcome
			err     string
		}{
			"ok":   {slotstore.Succeeded, ""},
			"bad":  {slotstore.Failed, "disk full"},
			"slow": {slotstore.TimedOut, "deadline"},
			"boom": {slotstore.Failed, "panic: nil map"},
		}
		hist, err := st.History(context.Background(), slotstore.HistoryParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != len(want) {
			t.Fatalf("history has %d markers, want %d", len(hist), len(want))
		}
		for _, m := range hist {
			w := want[m.Job]
			if m.Outcome != w.outcome || !strings.Contains(m.Error, w.err) || m.State != slotstore.StateDone {
				t.Errorf("%s: state %s outcome %s error %q, want %s with %q", m.Job, m.State, m.Outcome, m.Error, w.outcome, w.err)
			}
		}
	})
}

// After every replica was down for several slots, the first one back runs
// the missed slots of the last starting deadline as catch_up says.
func TestCatchUpAfterOutage(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   []int // seconds after the bubble's start
	}{
		{"none", nil},
		{"latest", []int{30}},
		{"all", []int{-20, -10, 0, 10, 20, 30}},
		{"all\n    catch_up_limit: 2", []int{20, 30}},
	} {
		t.Run(strings.Fields(tc.policy)[0]+fmt.Sprint(len(tc.want)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The store has known the job since well before the outage.
				st := steadyStore()
				if _, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(30 * time.Second)
				t0 := time.Now()
				time.Sleep(35 * time.Second)
				rec := &recorder{}
				reg := jobs.NewRegistry()
				reg.Register("j", rec.fn)
				conf := "jobs:\n  j:\n    schedule: \"@every 10s\"\n    catch_up: " + tc.policy + "\n"
				stop := start(t, replica(t, st, "a", conf, reg))
				time.Sleep(time.Second)
				stop()
				var got []int
				for _, ev := range rec.snapshot() {
					got = append(got, int(ev.run.Slot.Sub(t0)/time.Second))
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("caught up slots %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// While the store is unreachable past a slot's starting deadline the slot is
// missed, never run late; slots after the outage run once each.
func TestStoreOutageMissesThenRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		st := &flaky{Store: steadyStore()}
		rec := &recorder{}
		reg := jobs.NewRegistry()
		reg.Register("tick", rec.fn)
		conf := `jobs: {tick: {schedule: "*/1 * * * * *", starting_deadline: 2s, lease: 1s}}`
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(2500 * time.Millisecond)
		st.cut(true)
		time.Sleep(6 * time.Second)
		st.cut(false)
		time.Sleep(6 * time.Second)
		stop()
		seen := map[int]int{}
		for _, ev := range rec.snapshot() {
			sec := int(ev.run.Slot.Sub(t0) / time.Second)
			seen[sec]++
			if late := ev.started.Sub(ev.run.Slot); late > 2*time.Second {
				t.Errorf("slot %d started %v late, past its starting deadline", sec, late)
			}
		}
		for sec, n := range seen {
			if n != 1 {
				t.Errorf("slot %d ran %d times", sec, n)
			}
		}
		for sec := 0; sec <= 2; sec++ {
			if seen[sec] != 1 {
				t.Errorf("slot %d before the outage ran %d times", sec, seen[sec])
			}
		}
		for sec := 4; sec <= 5; sec++ {
			if seen[sec] != 0 {
				t.Errorf("slot %d, deep in the outage, ran", sec)
			}
		}
		for sec := 9; sec <= 14; sec++ {
			if seen[sec] != 1 {
				t.Errorf("slot %d after the outage ran %d times", sec, seen[sec])
			}
		}
	})
}

// A replica that starts long after a slot was claimed, past its starting
// deadline, still takes it over when the holder dies: it finds the running
// marker by reading the store, not by having watched the claim.
func TestLateReplicaTakesOverDeadHoldersSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 10 * time.Minute}, "long")
		conf := `jobs: {long: {schedule: "@every 24h", lease: 3s}}`
		holder := &flaky{Store: st}
		stopA := start(t, replica(t, holder, "a", conf, reg))
		time.Sleep(2 * time.Minute) // the slot is far past its starting deadline
		stopB := start(t, replica(t, st, "b", conf, reg))
		synctest.Wait()
		holder.cut(true) // a dies as far as the store can tell
		time.Sleep(20 * time.Second)
		evs := rec.snapshot()
		stopA()
		stopB()
		if len(evs) != 2 || evs[1].run.Replica != "b" || evs[1].run.Attempt != 2 || !evs[0].ended.Before(evs[1].started) {
			t.Fatalf("runs %+v, want a's run cancelled, then b's takeover", evs)
		}
	})
}

// Replicas whose clocks differ by up to the starting deadline try a slot at
// different moments but claim the same slot: each runs once.
func TestClockSkewRunsEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		st, rec, reg := rig(&recorder{sleep: 200 * time.Millisecond}, "tick")
		conf := `jobs: {tick: {schedule: "*/5 * * * * *", starting_deadline: 20s, lease: 2s}}`
		var stops []func()
		for i, skew := range []time.Duration{0, 19 * time.Second, -19 * time.Second, 7 * time.Second} {
			cfg, err := Parse("test.yaml", []byte(conf))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Replica = fmt.Sprintf("r%d", i)
			s, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()), WithClock(func() time.Time { return time.Now().Add(skew) }))
			if err != nil {
				t.Fatal(err)
			}
			stops = append(stops, start(t, s))
		}
		time.Sleep(2 * time.Minute)
		for _, stop := range stops {
			stop()
		}
		seen := map[time.Time]int{}
		for _, ev := range rec.snapshot() {
			seen[ev.run.Slot]++
		}
		// Every slot from well after the start to well before the end ran
		// exactly once, whichever replica's clock got there first.
		for s := t0.Add(30 * time.Second); s.Before(t0.Add(90 * time.Second)); s = s.Add(5 * time.Second) {
			if seen[s.UTC()] != 1 {
				t.Errorf("slot %v ran %d times", s.UTC(), seen[s.UTC()])
			}
		}
		for s, n := range seen {
			if n > 1 {
				t.Errorf("slot %v ran %d times", s, n)
			}
		}
	})
}

// Jitter delays each job by a fixed amount derived from its name, the same on
// every replica, without moving its slots.
func TestJitterIsDeterministic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		reg := jobs.NewRegistry()
		reg.Register("a", rec.fn)
		reg.Register("b", rec.fn)
		conf := "defaults: {jitter: 20s}\njobs:\n  a: {schedule: '@every 1m', catch_up: none}\n  b: {schedule: '@every 1m', catch_up: none}\n"
		stop := start(t, replica(t, steadyStore(), "r", conf, reg))
		time.Sleep(2*time.Minute + 30*time.Second)
		stop()
		delays := map[string][]time.Duration{}
		for _, ev := range rec.snapshot() {
			if ev.run.Slot.Second() != 0 {
				t.Errorf("slot %v moved off the schedule", ev.run.Slot)
			}
			delays[ev.run.Job] = append(delays[ev.run.Job], ev.started.Sub(ev.run.Slot))
		}
		for _, job := range []string{"a", "b"} {
			want := jitterFor(job, 20*time.Second)
			if len(delays[job]) != 3 {
				t.Fatalf("%s ran %d times, want 3", job, len(delays[job]))
			}
			for _, d := range delays[job] {
				if d != want {
					t.Errorf("%s started %v after its slot, want %v", job, d, want)
				}
			}
		}
		if jitterFor("a", 20*time.Second) == jitterFor("b", 20*time.Second) {
			t.Errorf("a and b got the same jitter")
		}
	})
}

// lossy wins claims but loses the reply of the first batch.
type lossy struct {
	slotstore.Store
	lost atomic.Bool
}

func (s *lossy) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, p)
	if err == nil && !s.lost.Swap(true) {
		return nil, fmt.Errorf("claim: %w: test: reply lost", slotstore.ErrOutcomeUnknown)
	}
	return res, err
}

// A claim that won but whose reply was lost is adopted at the next try, not
// left to expire and be taken over a lease late.
func TestLostClaimReplyIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{}, "j")
		stop := start(t, replica(t, &lossy{Store: st}, "a", `jobs: {j: {schedule: "@every 1h", lease: 30s, on_crash: skip}}`, reg))
		time.Sleep(5 * time.Second)
		stop()
		evs := rec.snapshot()
		if len(evs) != 1 || evs[0].run.Attempt != 1 || evs[0].started.Sub(evs[0].run.Slot) > time.Second {
			t.Fatalf("runs %+v, want the slot run at once as attempt 1", evs)
		}
		if hist, _ := st.History(context.Background(), slotstore.HistoryParams{Job: "j"}); len(hist) != 1 || hist[0].Outcome != slotstore.Succeeded {
			t.Errorf("history %+v", hist)
		}
	})
}
