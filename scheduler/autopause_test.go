package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// failing is a job that fails with "boom N" on its Nth run, but for the
// runs it is told to succeed; it records who ran each.
type failing struct {
	mu       sync.Mutex
	runs     []jobs.Run
	succeeds map[int]bool
}

func (f *failing) fn(_ context.Context, run jobs.Run) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, run)
	if f.succeeds[len(f.runs)] {
		return nil
	}
	return fmt.Errorf("boom %d", len(f.runs))
}

func (f *failing) ran() []jobs.Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]jobs.Run(nil), f.runs...)
}

// autoPauseRig is a memory store, the failing job registered as "fail",
// and a JSON log every replica writes to.
type autoPauseRig struct {
	conf string
	st   *memstore.Store
	job  *failing
	reg  *jobs.Registry
	log  testlog.Buffer
}

func newAutoPauseRig(succeeds ...int) *autoPauseRig {
	r := &autoPauseRig{conf: autoPauseConf, st: memstore.New(memstore.Options{}), job: &failing{succeeds: map[int]bool{}}, reg: jobs.NewRegistry()}
	for _, n := range succeeds {
		r.job.succeeds[n] = true
	}
	r.reg.Register("fail", r.job.fn)
	return r
}

const autoPauseConf = "defaults: {pause_after_failures: 3}\n" +
	"jobs: {fail: {schedule: '*/10 * * * * *', catch_up: none, lease: 2s}}"

func (r *autoPauseRig) replica(t *testing.T, name string, opts ...Option) *Scheduler {
	opts = append([]Option{WithLogger(slog.New(slog.NewJSONHandler(&r.log, nil)))}, opts...)
	return replica(t, r.st, name, r.conf, r.reg, opts...)
}

// note returns the pause note of the job, and whether the job is paused.
func (r *autoPauseRig) note(t *testing.T) (slotstore.PauseNote, bool) {
	t.Helper()
	ps, err := r.st.Pauses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range ps.Jobs {
		if j == "fail" {
			return ps.Notes["fail"], true
		}
	}
	return slotstore.PauseNote{}, false
}

// awaitPause waits (on the fake clock) until the job is paused, at most
// two minutes, and returns its note.
func (r *autoPauseRig) awaitPause(t *testing.T) slotstore.PauseNote {
	t.Helper()
	for range 120 {
		if n, ok := r.note(t); ok {
			return n
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("the job is not paused after %d runs", len(r.job.ran()))
	return slotstore.PauseNote{}
}

func (r *autoPauseRig) resume(t *testing.T) {
	t.Helper()
	if err := r.st.SetPause(context.Background(), slotstore.PauseParams{Job: "fail"}); err != nil {
		t.Fatal(err)
	}
}

// pauseLines returns the log's "job paused after failures" records.
func (r *autoPauseRig) pauseLines(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, rec := range r.log.Records(t) {
		if rec["msg"] == "job paused after failures" {
			out = append(out, rec)
		}
	}
	return out
}

// A job failing every slot with pause_after_failures: 3 is paused after its
// third, by slotcron, with the count and the last error as the reason; the
// replica logs it at ERROR and counts it. Its slots are skipped while it is
// paused. Resumed after slots were skipped for the pause, it is paused
// again after three more failures; resumed before its next slot was due, the
// row goes on and its next failure pauses it again.
func TestPauseAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		metrics := prometheus.NewRegistry()
		stop := start(t, r.replica(t, "a", WithRegistry(metrics)))
		defer stop()

		note := r.awaitPause(t)
		if n := len(r.job.ran()); n != 3 {
			t.Errorf("paused after %d runs, want 3", n)
		}
		want := "3 failed slots in a row; last error: boom 3"
		if note.By != "slotcron" || note.Reason != want {
			t.Errorf("pause note by %q reason %q, want by slotcron reason %q", note.By, note.Reason, want)
		}
		lines := r.pauseLines(t)
		if len(lines) != 1 || lines[0]["level"] != "ERROR" || lines[0]["job"] != "fail" ||
			lines[0]["failures"] != 3.0 || lines[0]["last_error"] != "boom 3" {
			t.Errorf("pause logged as %v, want one ERROR line with job fail, failures 3, last_error boom 3", lines)
		}
		if got := counter(t, metrics, "slotcron_jobs_auto_paused_total", "job_name", "fail"); got != 1 {
			t.Errorf("slotcron_jobs_auto_paused_total %v, want 1", got)
		}

		// Paused: its slots are skipped, then a resume lets three more fail.
		time.Sleep(35 * time.Second)
		if n := len(r.job.ran()); n != 3 {
			t.Errorf("%d runs while paused, want none", n-3)
		}
		r.resume(t)
		note = r.awaitPause(t)
		if n := len(r.job.ran()); n != 6 || note.Reason != "3 failed slots in a row; last error: boom 6" {
			t.Errorf("after a resume, paused after %d runs, reason %q; want 6 and a row of 3", n, note.Reason)
		}

		// Resumed before its next slot: no slot was skipped, the row goes
		// on, and the next failure pauses the job again.
		r.resume(t)
		note = r.awaitPause(t)
		if n := len(r.job.ran()); n != 7 || note.Reason != "3 failed slots in a row; last error: boom 7" {
			t.Errorf("resumed at once: paused after %d runs, reason %q; want 7 and a row of 3", n, note.Reason)
		}
		if got := counter(t, metrics, "slotcron_jobs_auto_paused_total", "job_name", "fail"); got != 3 {
			t.Errorf("slotcron_jobs_auto_paused_total %v, want 3", got)
		}
		skipped := 0
		for _, m := range history(t, r.st, "fail") {
			if m.State == slotstore.StateSkipped && m.Reason == "paused" {
				skipped++
			}
		}
		if skipped < 3 {
			t.Errorf("%d slots skipped for the pause, want 3 or more", skipped)
		}
	})
}

// A success ends the row: two failures, a success, then the job is paused
// only after three more failures.
func TestPauseAfterFailuresSuccessResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig(3)
		stop := start(t, r.replica(t, "a"))
		defer stop()
		note := r.awaitPause(t)
		if n := len(r.job.ran()); n != 6 || note.Reason != "3 failed slots in a row; last error: boom 6" {
			t.Errorf("paused after %d runs, reason %q; want 6 (F F S F F F) and a row of 3", n, note.Reason)
		}
	})
}

// A job's pause_after_failures: 0 means never, whatever its defaults say.
func TestPauseAfterFailuresZeroNever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		r.conf = strings.Replace(r.conf, "lease: 2s", "lease: 2s, pause_after_failures: 0", 1)
		stop := start(t, r.replica(t, "a"))
		time.Sleep(95 * time.Second)
		stop()
		if _, paused := r.note(t); paused || len(r.job.ran()) < 9 {
			t.Errorf("paused %v after %d failed runs, want never", paused, len(r.job.ran()))
		}
	})
}

// The row is the cluster's: failures of consecutive slots run by different
// replicas count together, across restarts. Replica a fails the first
// slot, b the second, a (started anew) the third, and a pauses the job.
func TestPauseAfterFailuresAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		for i, name := range []string{"a", "b", "a"} {
			stop := start(t, r.replica(t, name))
			for len(r.job.ran()) <= i {
				time.Sleep(time.Second)
			}
			if i < 2 {
				stop()
				continue
			}
			defer stop()
		}
		note := r.awaitPause(t)
		runs := r.job.ran()
		if len(runs) != 3 || runs[0].Replica != "a" || runs[1].Replica != "b" || runs[2].Replica != "a" {
			t.Fatalf("runs %v, want three, by a, b, a", runs)
		}
		if note.By != "slotcron" || !strings.HasPrefix(note.Reason, "3 failed slots in a row") {
			t.Errorf("pause note %+v, want by slotcron after 3 failed slots", note)
		}
		lines := r.pauseLines(t)
		if len(lines) != 1 || lines[0]["replica"] != "a" || !runs[2].Slot.Equal(parseSlot(t, lines[0]["slot"])) {
			t.Errorf("pause logged as %v, want once, by a, for the third slot", lines)
		}
	})
}

func parseSlot(t *testing.T, v any) time.Time {
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Errorf("slot %v: %v", v, err)
	}
	return at
}

// pause_after_failures takes a whole number from 0 to 1000, in defaults or
// a job; anything else is refused at its file, line and key.
func TestPauseAfterFailuresConfig(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		line      int
		key, msg  string
	}{
		{"word", "defaults:\n  pause_after_failures: often\n", 2, "defaults.pause_after_failures", `want a whole number, not "often"`},
		{"fraction", "jobs:\n  hello:\n    schedule: '@hourly'\n    pause_after_failures: 2.5\n", 4, "jobs.hello.pause_after_failures", `want a whole number, not "2.5"`},
		{"negative", "jobs:\n  hello:\n    schedule: '@hourly'\n    pause_after_failures: -1\n", 4, "jobs.hello.pause_after_failures", "must not be negative"},
		{"too many", "defaults:\n  pause_after_failures: 5000\njobs:\n  hello: {schedule: '@hourly'}\n", 2, "defaults.pause_after_failures", "5000 is more than 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parseAndValidateAs("broken.yaml", []byte(tc.doc))
			var errs ConfigErrors
			if !errors.As(err, &errs) {
				t.Fatalf("error %v, want ConfigErrors", err)
			}
			for _, e := range errs {
				if e.File == "broken.yaml" && e.Line == tc.line && e.Key == tc.key && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("got:\n%v\nwant broken.yaml:%d: %s: ...%s...", err, tc.line, tc.key, tc.msg)
		})
	}
	for _, doc := range []string{
		"jobs: {hello: {schedule: '@hourly', pause_after_failures: 0}}",
		"defaults: {pause_after_failures: 1000}\njobs: {hello: {schedule: '@hourly', pause_after_failures: 1}}",
	} {
		if err := parseAndValidateAs("ok.yaml", []byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// refusingPauses is a store whose SetPause fails while refuse is above 0,
// counting down.
type refusingPauses struct {
	slotstore.Store
	mu     sync.Mutex
	refuse int
}

func (s *refusingPauses) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse > 0 {
		s.refuse--
		return errCut
	}
	return s.Store.SetPause(ctx, p)
}

// A store that refuses the pause twice is asked again, and the job is
// paused; one that keeps refusing leaves the job running, and says so at
// WARN, and the next failure pauses it.
func TestPauseAfterFailuresStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		refuse int
		runs   int
	}{{2, 3}, {3, 4}} {
		t.Run(fmt.Sprint(tc.refuse), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newAutoPauseRig()
				st := &refusingPauses{Store: r.st, refuse: tc.refuse}
				stop := start(t, r.replica(t, "a", WithStore(st)))
				defer stop()
				r.awaitPause(t)
				if n := len(r.job.ran()); n != tc.runs {
					t.Errorf("paused after %d runs, want %d", n, tc.runs)
				}
				warned := 0
				for _, rec := range r.log.Records(t) {
					if rec["msg"] == "could not decide on pausing the job after failures" && rec["level"] == "WARN" {
						warned++
					}
				}
				if want := tc.refuse / 3; warned != want {
					t.Errorf("%d warnings that the pause could not be decided, want %d", warned, want)
				}
			})
		})
	}
}
