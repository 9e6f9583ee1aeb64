package admin

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// FuzzAPI sends one request, read from arbitrary method, target and
// Authorization header as the server reads it, to the API of a replica on
// a memory store. setup picks the store's state: bit 0 pauses the cluster,
// bit 1 pauses job report, bit 2 holds a slot of the forbid job solo on
// another replica, bit 3 leaves http.token unset. No request may panic or
// fail the server (5xx); one refused (4xx) changes nothing in the store,
// except a trigger refused as busy, which records its manual slot skipped;
// a read changes nothing; and nothing changes without the bearer token.
func FuzzAPI(f *testing.F) {
	for _, tc := range []struct {
		setup                uint8
		method, target, auth string
	}{
		// From TestHTTPAPI.
		{0, "GET", "/api/jobs", ""},
		{0, "POST", "/api/jobs/report/trigger", ""},
		{0, "POST", "/api/jobs/report/trigger", "Bearer wrong"},
		{0, "POST", "/api/jobs/nope/trigger", "Bearer s3cret"},
		{0, "POST", "/api/jobs/report/trigger", "Bearer s3cret"},
		{0, "POST", "/api/pause?job=report", "Bearer s3cret"},
		{2, "POST", "/api/resume?job=report", "Bearer s3cret"},
		{0, "GET", "/api/history?job=report", ""},
		{0, "GET", "/", ""},
		{0, "GET", "/api/history?limit=0", ""},
		// Refusals and odd inputs.
		{1, "POST", "/api/jobs/report/trigger", "Bearer s3cret"},
		{4, "POST", "/api/jobs/solo/trigger", "Bearer s3cret"},
		{8, "POST", "/api/pause", "Bearer "},
		{0, "POST", "/api/pause?job=", "bearer s3cret"},
		{0, "GET", "/api/history?limit=10000&state=running&job=solo", ""},
		{0, "GET", "/api/history?limit=-1", ""},
		{0, "DELETE", "/api/jobs", ""},
		{0, "POST", "/api/jobs/%72eport/trigger", "Bearer s3cret"},
		{0, "POST", "/api/jobs/report/../../pause", "Bearer s3cret"},
		// The dashboard's API.
		{0, "POST", "/api/pause?job=report&reason=deploy", "Bearer s3cret"},
		{2, "POST", "/api/resume?job=report&reason=fixed&by=alice", "Bearer s3cret"},
		{1, "POST", "/api/resume?reason=done", "Bearer s3cret"},
		{0, "POST", "/api/pause?reason=", "Bearer s3cret"},
		{0, "POST", "/api/pause?reason=x&reason=y", "Bearer s3cret"},
		{0, "GET", "/api/jobs/report", ""},
		{0, "GET", "/api/jobs/report/history?outcome=succeeded&attempt_gt=0&manual=false&limit=1", ""},
		{0, "GET", "/api/jobs/report/history?before=2020-01-01T00:00:00Z&state=done", ""},
		{0, "GET", "/api/jobs?q=rep&limit=1&offset=1", ""},
		{4, "GET", "/api/cluster", ""},
		{0, "POST", "/api/jobs/report/backfill?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z&dry_run=true", "Bearer s3cret"},
		{0, "POST", "/api/jobs/report/backfill?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z", "Bearer s3cret"},
		// The catalog's.
		{0, "GET", "/api/jobs/report/audit?from=2026-01-01T00:00:00Z", ""},
		{0, "GET", "/api/jobs/report/audit?from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z", ""},
		{0, "GET", "/api/jobs/solo/audit?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", ""},
		{0, "GET", "/api/jobs/report/audit?from=-1", ""},
		{0, "GET", "/api/catalog?limit=1&after=report", ""},
		{0, "GET", "/api/catalog?limit=100000", ""},
	} {
		f.Add(tc.setup, tc.method, tc.target, tc.auth)
	}
	f.Fuzz(func(t *testing.T, setup uint8, method, target, auth string) {
		req := readRequest(method, target, auth)
		if req == nil {
			return // the server answers 400 before any handler sees it
		}
		rig := newAPIRig(t, setup)
		before := rig.state(t)
		rec := httptest.NewRecorder()
		rig.api.ServeHTTP(rec, req)
		rig.stop() // a triggered run ends
		after := rig.state(t)
		rig.check(t, req, rec, before, after)
	})
}

// readRequest reads the request a client sending these would make the
// server see, or nil if the server would refuse it unread. A request line
// and header are bounded by the server's header limit.
func readRequest(method, target, auth string) *http.Request {
	if len(method)+len(target)+len(auth) > http.DefaultMaxHeaderBytes {
		return nil
	}
	raw := method + " " + target + " HTTP/1.1\r\nHost: slotcron.test\r\n"
	if auth != "" {
		raw += "Authorization: " + auth + "\r\n"
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n")))
	if err != nil {
		return nil
	}
	for _, vs := range req.Header { // as net/http's server checks them
		for _, v := range vs {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return nil
			}
		}
	}
	return req
}

// apiRig is one replica's API on a fresh memory store, its engine running.
type apiRig struct {
	st    *memstore.Store
	api   http.Handler
	token string
	// stop stops the engine: it returns once every run it started, a
	// triggered one too, has ended.
	stop func()
}

// never is a schedule that never comes due: the engine runs, but only the
// API's requests change the store.
const never = "0 0 30 2 *"

func newAPIRig(t *testing.T, setup uint8) *apiRig {
	rig := &apiRig{st: memstore.New(memstore.Options{}), token: "s3cret"}
	if setup&8 != 0 {
		rig.token = ""
	}
	sched, err := schedule.Parse(never, "")
	if err != nil {
		t.Fatal(err)
	}
	spec := func(name string, overlap policy.Overlap) engine.JobSpec {
		return engine.JobSpec{Name: name, Fn: func(context.Context, jobs.Run) error { return nil }, Schedule: sched,
			Lease: 15 * time.Second, Timeout: time.Minute, Deadline: time.Minute, History: time.Hour, Overlap: overlap}
	}
	e, err := engine.New(engine.Config{Replica: "a", Incarnation: "fuzz", Log: slog.New(slog.DiscardHandler), Now: time.Now,
		Grace: time.Minute, Jobs: []engine.JobSpec{spec("report", policy.OverlapAllow), spec("solo", policy.OverlapForbid)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	gens, err := rig.st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"report", "solo"}})
	if err != nil {
		t.Fatal(err)
	}
	slot := gens[0].From().Truncate(time.Second).Add(time.Hour)
	claim := func(job string) slotstore.Claim {
		res, err := rig.st.Claim(ctx, slotstore.ClaimParams{Replica: "b", Requests: []slotstore.ClaimRequest{
			{Job: job, Slot: slot, Lease: time.Hour}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim %s: %v %v", job, res, err)
		}
		return res[0].Claim
	}
	if err := rig.st.Finish(ctx, slotstore.FinishParams{Ref: claim("report").Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	for bit, job := range map[uint8]string{1: "", 2: "report"} {
		if setup&bit != 0 {
			if err := rig.st.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if setup&4 != 0 {
		claim("solo")
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx, engine.RunParams{Store: rig.st}) }()
	rig.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(rig.stop)
	// Triggers start their runs on the running engine's loop.
	poll.Until(t, 10*time.Second, "the engine to start", func() error {
		if !running(e) {
			return errors.New("it has no store yet")
		}
		return nil
	})
	rig.api = Handler(e, Options{Token: rig.token})
	return rig
}

// apiState is what the API can change in the store.
type apiState struct {
	Markers []slotstore.Marker
	Pauses  slotstore.Pauses
}

func (rig *apiRig) state(t *testing.T) apiState {
	ms, err := rig.st.History(t.Context(), slotstore.HistoryParams{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := rig.st.Pauses(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return apiState{ms, ps}
}
