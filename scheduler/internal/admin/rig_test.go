package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// rig is one replica, "a", running on a memory store whose clock the test
// may set back (lag), with the admin API in front of it.
type rig struct {
	st   *memstore.Store
	e    *engine.Engine
	api  http.Handler
	logs *testlog.Buffer
	lag  atomic.Int64 // how far the store's clock runs behind, in ns
	// stop stops the engine and waits for it; it may be called again.
	stop func()
}

// rigConfig is what a rig runs.
type rigConfig struct {
	jobs   []engine.JobSpec
	duties []engine.DutySpec
	// store wraps the memory store the engine runs on, if set.
	store func(slotstore.Store) slotstore.Store
	// before runs on the store before the engine starts.
	before func(r *rig)
	opts   Options
	// revision is the configuration's revision.
	revision int64
	// lookup, when set, has the engine run the schedules held as data of
	// the jobs it finds, and the API serve /api/schedules on the store.
	lookup func(string) (jobs.Func, bool)
}

// spec is a job that does nothing, on spec (in zone tz).
func spec(t *testing.T, name, cron, tz string) engine.JobSpec {
	t.Helper()
	sched, err := schedule.Parse(cron, tz)
	if err != nil {
		t.Fatal(err)
	}
	return engine.JobSpec{Name: name, Fn: func(context.Context, jobs.Run) error { return nil }, Schedule: sched,
		Lease: 15 * time.Second, Timeout: time.Minute, Deadline: time.Minute, History: 24 * time.Hour,
		Overlap: policy.OverlapAllow, CatchUp: policy.CatchUpNone}
}

func newRig(t *testing.T, c rigConfig) *rig {
	t.Helper()
	r := &rig{logs: &testlog.Buffer{}}
	r.st = memstore.New(memstore.Options{Clock: func() time.Time { return time.Now().Add(-time.Duration(r.lag.Load())) }})
	log := slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := engine.New(engine.Config{Replica: "a", Incarnation: "test", Log: log, Now: time.Now, Grace: time.Second,
		Jobs: c.jobs, Duties: c.duties, Revision: c.revision, Lookup: c.lookup})
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	if c.before != nil {
		c.before(r)
	}
	var st slotstore.Store = r.st
	if c.store != nil {
		st = c.store(st)
	}
	rp := engine.RunParams{Store: st}
	if len(c.duties) > 0 {
		if rp.Elector, _, err = backend.Elector(t.Context(), st, log); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, rp) }()
	r.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(r.stop)
	poll.Until(t, 10*time.Second, "the engine to start", func() error {
		if !running(e) {
			return errors.New("it has no store yet")
		}
		// Every job in the store's catalog, as a request about it expects.
		if !strings.Contains(r.logs.String(), "jobs enrolled") {
			return errors.New("its jobs are not enrolled yet")
		}
		return nil
	})
	if c.opts.Token == "" {
		c.opts.Token = "s3cret"
	}
	if c.lookup != nil {
		c.opts.Schedules = storeSchedules{st: r.st}
	}
	r.api = Handler(e, c.opts)
	return r
}

// do sends a request to the API: with the bearer token when auth, with
// body as its JSON body when not empty. It returns the status, the headers
// and the body.
func (r *rig) do(t *testing.T, method, target, body string, auth bool) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if auth {
		req.Header.Set("Authorization", "Bearer s3cret")
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	r.api.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.String()
}

// get sends a GET, wants 200 and decodes the answer into v.
func (r *rig) get(t *testing.T, target string, v any) http.Header {
	t.Helper()
	code, h, body := r.do(t, "GET", target, "", false)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
	return h
}

// wantError checks an error answer: its status, its code, and that its
// message mentions each of says.
func wantError(t *testing.T, what string, code int, body string, wantCode int, wantAPICode string, says ...string) {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != wantCode || e.Code != wantAPICode {
		t.Errorf("%s: %d %s, want %d with code %q", what, code, body, wantCode, wantAPICode)
		return
	}
	for _, s := range says {
		if !strings.Contains(e.Error, s) {
			t.Errorf("%s: error %q does not mention %q", what, e.Error, s)
		}
	}
}

// marker records a slot of job at slot by replica holder, ending as end
// says: "ok", "fail:<error>", "run" (left running for an hour), "skip",
// "retry" (attempt 2 after a released first claim, then ok). manual marks
// it a manual trigger's.
func (r *rig) marker(t *testing.T, job string, slot time.Time, holder, end string, manual bool) {
	t.Helper()
	ctx := t.Context()
	if end == "skip" {
		res, err := r.st.Skip(ctx, slotstore.SkipParams{Replica: holder, Requests: []slotstore.SkipRequest{{Job: job, Slot: slot, Reason: "missed: test"}}})
		if err != nil || res[0].Status != slotstore.Skipped {
			t.Fatalf("skip %s@%s: %v %v", job, slot, res, err)
		}
		return
	}
	claim := func(lease time.Duration) slotstore.Claim {
		res, err := r.st.Claim(ctx, slotstore.ClaimParams{Replica: holder, Requests: []slotstore.ClaimRequest{
			{Job: job, Slot: slot, Lease: lease, Manual: manual}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim %s@%s: %v %v", job, slot, res, err)
		}
		return res[0].Claim
	}
	c := claim(time.Hour)
	switch {
	case end == "run":
		return
	case end == "retry":
		if err := r.st.Release(ctx, c.Ref); err != nil {
			t.Fatal(err)
		}
		c = claim(time.Hour)
		end = "ok"
	}
	p := slotstore.FinishParams{Ref: c.Ref, Outcome: slotstore.Succeeded, Duration: 1500 * time.Millisecond}
	if msg, ok := strings.CutPrefix(end, "fail:"); ok {
		p.Outcome, p.Error = slotstore.Failed, msg
	}
	if err := r.st.Finish(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// enroll begins the generation of jobs at the store's time now.
func (r *rig) enroll(t *testing.T, names ...string) time.Time {
	t.Helper()
	gens, err := r.st.Enroll(t.Context(), slotstore.EnrollParams{Jobs: names})
	if err != nil {
		t.Fatal(err)
	}
	return gens[0].Born
}

// running reports whether e has a Run in progress.
func running(e *engine.Engine) bool {
	_, ok := e.Records()
	return ok
}

// backfilled records slot of job run by a backfill claim of replica "b",
// and succeeded.
func (r *rig) backfilled(t *testing.T, job string, slot time.Time) {
	t.Helper()
	res, err := r.st.Claim(t.Context(), slotstore.ClaimParams{Replica: "b", Requests: []slotstore.ClaimRequest{
		{Job: job, Slot: slot, Lease: time.Minute, Backfill: true}}})
	if err != nil || res[0].Status != slotstore.Won || !res[0].Marker.Backfill {
		t.Fatalf("backfill claim %s@%s: %+v %v", job, slot, res, err)
	}
	if err := r.st.Finish(t.Context(), slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
}
