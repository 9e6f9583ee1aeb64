package scheduler

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// /metrics, /healthz and /readyz answer while the replica runs, and the
// metrics count what happened.
func TestHTTPEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port and waits for real slots")
	}
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	reg := jobs.NewRegistry()
	reg.Register("tick", func(ctx context.Context, run jobs.Run) error { return nil })
	s := replica(t, memstore.New(memstore.Options{}), "a", "http: {listen: \""+addr+"\", token: s3cret}\njobs: {tick: {schedule: \"*/1 * * * * *\"}, report: {run: tick, schedule: '@daily'}}", reg)
	stop := start(t, s)
	defer stop()

	get := func(path string) (int, string) {
		t.Helper()
		return call(t, "GET", "http://"+addr+path, "")
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(path); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	wants := []string{
		`slotcron_runs_total{job_name="tick",outcome="succeeded"}`,
		`slotcron_claims_total{job_name="tick",result="won"}`,
		`slotcron_dispatch_delay_seconds_count `, // one histogram per replica unless per_job_histograms
		`slotcron_next_run_timestamp_seconds{job_name="tick"}`,
		`slotcron_store_up 1`,
		`slotcron_startup_duration_seconds `,
		`go_goroutines`,
	}
	poll.Until(t, 30*time.Second, "every series on /metrics", func() error {
		_, body := get("/metrics")
		if lacks := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(body, w) }); len(lacks) > 0 {
			return fmt.Errorf("/metrics lacks %s", strings.Join(lacks, ", "))
		}
		if strings.Contains(body, "\nslotcron_startup_duration_seconds 0\n") {
			return fmt.Errorf("the start-up that ran tick is not over on /metrics")
		}
		return nil
	})
}

func TestHTTPAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port")
	}
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	ran := make(chan string, 4)
	reg := jobs.NewRegistry()
	reg.Register("report", func(ctx context.Context, run jobs.Run) error { ran <- run.Key(); return nil })
	st := memstore.New(memstore.Options{})
	stop := start(t, replica(t, st, "a", "http: {listen: \""+addr+"\", token: s3cret}\njobs: {report: {schedule: '@daily', catch_up: none}}", reg))
	defer stop()
	base := "http://" + addr
	do := func(method, path, token string) (int, string) {
		t.Helper()
		if token != "" {
			token = "Bearer " + token
		}
		return call(t, method, base+path, token)
	}
	if code, body := do("GET", "/api/jobs", ""); code != 200 || !strings.Contains(body, `"name":"report"`) || !strings.Contains(body, `"paused":false`) {
		t.Errorf("jobs: %d %s", code, body)
	}
	if code, _ := do("POST", "/api/jobs/report/trigger", ""); code != http.StatusUnauthorized {
		t.Errorf("trigger without token: %d", code)
	}
	if code, _ := do("POST", "/api/jobs/report/trigger", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("trigger with a wrong token: %d", code)
	}
	if code, _ := do("POST", "/api/jobs/nope/trigger", "s3cret"); code != http.StatusNotFound {
		t.Errorf("trigger of an unknown job: %d", code)
	}
	code, body := do("POST", "/api/jobs/report/trigger", "s3cret")
	if code != http.StatusAccepted || !strings.Contains(body, `"key":"report@`) {
		t.Fatalf("trigger: %d %s", code, body)
	}
	select {
	case key := <-ran:
		if !strings.Contains(body, key) {
			t.Errorf("ran %s, trigger answered %s", key, body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the triggered run did not start")
	}
	if code, body := do("POST", "/api/pause?job=report&reason=test", "s3cret"); code != 200 || !strings.Contains(body, `"report"`) {
		t.Errorf("pause: %d %s", code, body)
	}
	if code, body := do("GET", "/api/jobs", ""); code != 200 || !strings.Contains(body, `"paused":true`) {
		t.Errorf("jobs after pause: %d %s", code, body)
	}
	if code, _ := do("POST", "/api/resume?job=report&reason=test", "s3cret"); code != 200 {
		t.Errorf("resume: %d", code)
	}
	poll.Until(t, 10*time.Second, "the manual run's success in the history", func() error {
		code, body := do("GET", "/api/history?job=report", "")
		if code != 200 || !strings.Contains(body, `"manual":true`) || !strings.Contains(body, `"outcome":"succeeded"`) {
			return fmt.Errorf("history: %d %s", code, body)
		}
		return nil
	})
	if code, body := do("GET", "/", ""); code != 200 || !strings.Contains(body, "<title>slotcron</title>") {
		t.Errorf("dashboard: %d %.300s", code, body)
	}
	if code, body := do("GET", "/api/jobs/report/history?manual=true", ""); code != 200 || !strings.Contains(body, `"manual":true`) {
		t.Errorf("the job's manual slots: %d %s", code, body)
	}
	if code, _ := do("GET", "/api/history?limit=0", ""); code != http.StatusBadRequest {
		t.Errorf("history limit 0: %d", code)
	}
}
