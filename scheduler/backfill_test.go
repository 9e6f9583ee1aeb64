package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// outage leaves st with job j (every 10 s, catch_up none) run for a while
// by a replica, then an outage of 35 s that the replica found when it came
// back: the slots the outage held are recorded skipped. It returns the
// outage's start; the caller is in a synctest bubble.
func outage(t *testing.T, st slotstore.Store, conf ...string) time.Time {
	t.Helper()
	c := backfillConf + strings.Join(conf, "")
	reg := jobs.NewRegistry()
	reg.Register("j", (&recorder{}).fn)
	stop := start(t, replica(t, st, "a", c, reg))
	time.Sleep(25 * time.Second)
	stop()
	t0 := time.Now()
	time.Sleep(35 * time.Second)
	stop = start(t, replica(t, st, "a", c, reg))
	time.Sleep(time.Second)
	stop()
	return t0
}

const backfillConf = "jobs:\n  j:\n    schedule: \"@every 10s\"\n    catch_up: none\n    starting_deadline: 5s\n"

// ranSlots lists the slots rec ran, as seconds after t0, in order.
func ranSlots(rec *recorder, t0 time.Time) []int {
	var got []int
	for _, ev := range rec.snapshot() {
		got = append(got, int(ev.run.Slot.Sub(t0)/time.Second))
	}
	slices.Sort(got)
	return got
}

// A backfill runs the slots an outage made miss, once each, and leaves the
// rest alone; run again, it runs nothing.
func TestBackfillRunsMissedSlotsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		t0 := outage(t, st)
		missed := 0
		for _, m := range history(t, st, "j") {
			if m.State == slotstore.StateSkipped {
				missed++
			}
		}
		if missed == 0 {
			t.Fatalf("the outage left no skipped slot: %+v", history(t, st, "j"))
		}

		rec := &recorder{}
		reg := jobs.NewRegistry()
		reg.Register("j", rec.fn)
		s := replica(t, st, "b", backfillConf, reg)
		p := BackfillParams{From: t0.Add(-25 * time.Second), To: t0.Add(35 * time.Second)}

		dry := p
		dry.DryRun = true
		plan, err := s.Backfill(context.Background(), "j", dry)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.snapshot()) != 0 {
			t.Fatal("a dry run ran slots")
		}
		var want []int
		for _, sl := range plan.Slots {
			if sl.Action == BackfillRun {
				want = append(want, int(sl.Slot.Sub(t0)/time.Second))
			}
		}
		if len(want) != missed {
			t.Errorf("the plan runs %v, want the %d skipped slots: %+v", want, missed, plan.Slots)
		}

		res, err := s.Backfill(context.Background(), "j", p)
		if err != nil {
			t.Fatal(err)
		}
		if got := ranSlots(rec, t0); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("backfill ran %v, want %v", got, want)
		}
		for _, sl := range res.Slots {
			if sl.Action == BackfillRun && (sl.End != EndSucceeded || sl.Fence == 0) {
				t.Errorf("slot %v: %+v", sl.Slot, sl)
			}
		}
		for _, m := range history(t, st, "j") {
			if m.State != slotstore.StateDone && !m.Slot.Before(p.From) && !m.Slot.After(p.To) {
				t.Errorf("after the backfill %v is %s (%s)", m.Slot, m.State, m.Reason)
			}
		}

		again, err := s.Backfill(context.Background(), "j", p)
		if err != nil {
			t.Fatal(err)
		}
		if again.ToRun() != 0 || len(rec.snapshot()) != len(want) {
			t.Errorf("a second backfill planned %d and ran %d slots, want none", again.ToRun(), len(rec.snapshot())-len(want))
		}
	})
}

// Backfills of one range on several replicas at once run each slot once:
// every slot is claimed like any other.
func TestConcurrentBackfillsRunEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		t0 := outage(t, st)
		rec := &recorder{sleep: time.Second}
		reg := jobs.NewRegistry()
		reg.Register("j", rec.fn)
		p := BackfillParams{From: t0.Add(-25 * time.Second), To: t0.Add(35 * time.Second)}
		var wg sync.WaitGroup
		for i := range 3 {
			s := replica(t, st, fmt.Sprintf("r%d", i), backfillConf, reg)
			wg.Go(func() {
				if _, err := s.Backfill(context.Background(), "j", p); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got := ranSlots(rec, t0)
		if len(got) == 0 || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("slots run by three backfills: %v, want each skipped slot once", got)
		}
	})
}

// While Run runs, a backfill goes through its engine; a paused job is
// refused, and a range with too many slots or none is an error.
func TestBackfillDuringRunAndRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		t0 := outage(t, st)
		rec := &recorder{}
		reg := jobs.NewRegistry()
		reg.Register("j", rec.fn)
		s := replica(t, st, "b", backfillConf, reg)
		stop := start(t, s)
		defer stop()
		time.Sleep(time.Second)
		p := BackfillParams{From: t0, To: t0.Add(30 * time.Second)}
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: "j", Paused: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Backfill(context.Background(), "j", p); !errors.Is(err, ErrPaused) {
			t.Errorf("a paused job: %v, want ErrPaused", err)
		}
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: "j"}); err != nil {
			t.Fatal(err)
		}
		before := len(rec.snapshot())
		res, err := s.Backfill(context.Background(), "j", p)
		if err != nil || res.ToRun() == 0 {
			t.Fatalf("backfill during Run: %+v %v", res, err)
		}
		if n := len(rec.snapshot()) - before; n != res.ToRun() {
			t.Errorf("backfill during Run ran %d slots, planned %d", n, res.ToRun())
		}

		if _, err := s.Backfill(context.Background(), "j", BackfillParams{From: time.Now().Add(-24 * time.Hour), To: time.Now()}); !errors.Is(err, ErrBackfillRange) {
			t.Errorf("a day of 10 s slots: %v, want ErrBackfillRange", err)
		}
		if _, err := s.Backfill(context.Background(), "j", BackfillParams{From: time.Now().Add(time.Hour), To: time.Now().Add(2 * time.Hour)}); !errors.Is(err, ErrBackfillRange) {
			t.Errorf("a future range: %v, want ErrBackfillRange", err)
		}
		if _, err := s.Backfill(context.Background(), "nope", BackfillParams{From: t0, To: t0}); !errors.Is(err, ErrNoJob) {
			t.Errorf("an unknown job: %v, want ErrNoJob", err)
		}
	})
}

// A backfill of an overlap: forbid job never runs beside another slot of
// the job: while one runs, the slots it would run are left, said so, and a
// later backfill runs them.
func TestBackfillForbidWaitsForNoRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		forbid := "    overlap: forbid\n"
		t0 := outage(t, st, forbid)
		rec := &recorder{sleep: 20 * time.Second}
		reg := jobs.NewRegistry()
		reg.Register("j", rec.fn)
		s := replica(t, st, "b", backfillConf+forbid, reg)
		triggered := make(chan error, 1)
		go func() {
			_, err := s.Trigger(context.Background(), "j")
			triggered <- err
		}()
		time.Sleep(time.Second)
		p := BackfillParams{From: t0, To: t0.Add(30 * time.Second)}
		res, err := s.Backfill(context.Background(), "j", p)
		if err != nil || res.ToRun() == 0 {
			t.Fatalf("backfill: %+v %v", res, err)
		}
		for _, sl := range res.Slots {
			if sl.Action == BackfillRun && (sl.End != "" || !strings.Contains(sl.Err, "another slot of j was running")) {
				t.Errorf("slot %v while a trigger ran: %+v", sl.Slot, sl)
			}
		}
		if n := len(rec.snapshot()); n != 1 {
			t.Errorf("%d runs while the trigger ran, want the trigger's alone", n)
		}
		if err := <-triggered; err != nil {
			t.Fatal(err)
		}
		again, err := s.Backfill(context.Background(), "j", p)
		if err != nil || again.ToRun() != res.ToRun() {
			t.Fatalf("backfill after the trigger: %+v %v", again, err)
		}
		if n := len(rec.snapshot()); n != 1+res.ToRun() {
			t.Errorf("%d runs, want the trigger's and %d backfilled", n, res.ToRun())
		}
	})
}

// A backfill leaves the slots older than the job's history (their markers
// may have been deleted after they ran) and those whose starting window
// is still open (the running replicas may start them), and refuses a range
// of those alone.
func TestBackfillLeavesOldAndOpenSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := steadyStore()
		conf := "    history: 90s\n"
		outage(t, st, conf)
		time.Sleep(60 * time.Second)
		reg := jobs.NewRegistry()
		rec := &recorder{}
		reg.Register("j", rec.fn)
		s := replica(t, st, "b", backfillConf+conf, reg)
		now := time.Now()
		plan, err := s.Backfill(context.Background(), "j", BackfillParams{From: now.Add(-10 * time.Minute), To: now, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		kept := now.Add(-90*time.Second + time.Minute)
		closed := now.Add(-5*time.Second - time.Second)
		old, run := 0, 0
		for _, sl := range plan.Slots {
			switch {
			case sl.Slot.After(closed):
				t.Errorf("slot %v is in the open window, after %v", sl.Slot, closed)
			case sl.Slot.Before(kept):
				old++
				if sl.Action != BackfillLeave || !strings.Contains(sl.Reason, "older than the job's history (1m30s)") {
					t.Errorf("slot %v older than the history: %+v", sl.Slot, sl)
				}
			case sl.Action == BackfillRun:
				run++
			}
		}
		if old == 0 || run == 0 {
			t.Errorf("plan %+v: %d old slots, %d to run; want both", plan.Slots, old, run)
		}
		if _, err := s.Backfill(context.Background(), "j", BackfillParams{From: now.Add(-3 * time.Second), To: now}); !errors.Is(err, ErrBackfillRange) ||
			!strings.Contains(err.Error(), "too recent") {
			t.Errorf("a range in the open window: %v, want ErrBackfillRange", err)
		}
	})
}

// The CLI's backfill lists what it would run with --dry-run, runs it, and
// leaves it alone when run again; bad arguments are usage errors.
func TestCLIBackfill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	conf := filepath.Join(dir, "slotcron.yaml")
	if err := os.WriteFile(conf, []byte("store: {sqlite: {path: "+path+"}}\njobs:\n  tick:\n    schedule: '* * * * * *'\n    timezone: Europe/Paris\n    starting_deadline: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	reg := jobs.NewRegistry()
	reg.Register("tick", rec.fn)
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Command(context.Background(), args, &out, &errb, reg)
		return out.String(), errb.String(), code
	}
	// The store must know the job from before the range: a slot older than
	// the job's record in the store is never run (it may have, before a loss).
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	gens, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"tick"}})
	if err != nil {
		t.Fatal(err)
	}
	first := gens[0].From().Truncate(time.Second).Add(time.Second)
	// Two slots missed while no replica ran, as catch-up records them.
	// Past the slots' starting windows (1 s, and a second of clock skew).
	time.Sleep(time.Until(first.Add(4500 * time.Millisecond)))
	if _, err := st.Skip(context.Background(), slotstore.SkipParams{Replica: "a", Requests: []slotstore.SkipRequest{
		{Job: "tick", Slot: first, Reason: "missed: down"}, {Job: "tick", Slot: first.Add(time.Second), Reason: "missed: down"}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	from, to := first.UTC().Format(time.RFC3339), first.Add(2*time.Second).UTC().Format(time.RFC3339)

	out, errs, code := run("backfill", "tick", "--config", conf, "--from", from, "--to", to, "--dry-run")
	if code != ExitOK || !strings.Contains(out, "LOCAL (Europe/Paris)") || !strings.Contains(out, "3 would run") ||
		!strings.Contains(out, "skipped: missed: down") || len(rec.snapshot()) != 0 {
		t.Fatalf("dry run: exit %d, ran %d:\n%s%s", code, len(rec.snapshot()), out, errs)
	}
	out, errs, code = run("backfill", "tick", "--config", conf, "--from", from, "--to", to)
	if code != ExitOK || len(rec.snapshot()) != 3 || strings.Count(out, "succeeded (fence") != 3 {
		t.Fatalf("backfill: exit %d, ran %d:\n%s%s", code, len(rec.snapshot()), out, errs)
	}
	out, errs, code = run("backfill", "tick", "--config", conf, "--from", from, "--to", to, "--json")
	if code != ExitOK || !strings.Contains(out, `"to_run":0`) || len(rec.snapshot()) != 3 {
		t.Errorf("a second backfill: exit %d, ran %d:\n%s%s", code, len(rec.snapshot()), out, errs)
	}
	// The history marks the backfilled runs, in text and in JSON.
	if out, errs, code := run("history", "--config", conf, "--job", "tick"); code != ExitOK || strings.Count(out, "done (backfill)") != 3 {
		t.Errorf("history: exit %d, want 3 runs marked backfill:\n%s%s", code, out, errs)
	}
	if out, errs, code := run("history", "--config", conf, "--job", "tick", "--json"); code != ExitOK ||
		strings.Count(out, `"backfill":true`) != 3 {
		t.Errorf("history --json: exit %d, want 3 runs marked backfill:\n%s%s", code, out, errs)
	}

	if _, errs, code := run("backfill", "--config", conf, "tick", "--from", "2000-01-01"); code != ExitUsage || !strings.Contains(errs, "more than 1000 slots") {
		t.Errorf("too long a range: exit %d: %s", code, errs)
	}
	if _, errs, code := run("backfill", "--config", conf, "tick"); code != ExitUsage || !strings.Contains(errs, "--from is required") {
		t.Errorf("no --from: exit %d: %s", code, errs)
	}
	if _, errs, code := run("backfill", "--config", conf, "nope", "--from", from); code != ExitUsage || !strings.Contains(errs, `no job or schedule "nope"`) {
		t.Errorf("unknown job: exit %d: %s", code, errs)
	}
	if _, errs, code := run("backfill", "--config", conf, "tick", "--from", "yesterday"); code != ExitUsage || !strings.Contains(errs, "want RFC 3339") {
		t.Errorf("bad --from: exit %d: %s", code, errs)
	}
}
