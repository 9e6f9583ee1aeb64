package otlp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// With a collector that never answers, Run still returns within its
// bound, and when it does nothing it started is left running: no export
// goes on, and nothing is logged after "scheduler stopped".
func TestHungCollectorEndsWithRun(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
		select {                           // never answers while the test looks
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	before := goleak.IgnoreCurrent()
	var out testlog.Buffer
	cfg, err := scheduler.Parse("t.yaml", []byte(fmt.Sprintf(
		"replica: a\nshutdown_grace: 1s\ntracing: {otlp: {endpoint: %s}}\njobs: {tick: {schedule: '@every 1s'}}\n", srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 100)
	reg := jobs.NewRegistry()
	reg.Register("tick", func(context.Context, jobs.Run) error { ran <- struct{}{}; return nil })
	s, err := scheduler.New(cfg, reg, scheduler.WithStore(memstore.New(memstore.Options{})),
		scheduler.WithLogger(slog.New(slog.NewTextHandler(&out, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
	}
	cancel()
	stopped := time.Now()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	d := time.Since(stopped)
	t.Logf("Run returned %v after it was cancelled", d)
	if d > 8*time.Second {
		t.Errorf("Run returned %v after it was cancelled, want within 1s of grace and 5s of flush", d)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("Run left goroutines running: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `msg="scheduler stopped"`) {
		t.Errorf("the last line is %q, want scheduler stopped", last)
	}
}
