package scheduler

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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
	s := replica(t, memstore.New(), "a", "http: {listen: \""+addr+"\"}\njobs: {tick: {schedule: \"*/1 * * * * *\"}}", reg)
	stop := start(t, s)
	defer stop()

	get := func(path string) (int, string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Get("http://" + addr + path)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode, string(b)
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %v", path, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(path); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	_, body := get("/metrics")
	for _, want := range []string{
		`slotcron_runs_total{job="tick",outcome="succeeded"}`,
		`slotcron_claims_total{job="tick",result="won"}`,
		`slotcron_dispatch_delay_seconds_count{job="tick"}`,
		`slotcron_next_run_timestamp_seconds{job="tick"}`,
		`slotcron_store_up 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
