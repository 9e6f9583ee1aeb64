package leader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/internal/fakedriver"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// gather returns the value of each of the package's metrics for duty.
func gather(t *testing.T, reg *prometheus.Registry, duty string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if !hasLabel(m, "duty", duty) {
				continue
			}
			switch {
			case m.Gauge != nil:
				out[mf.GetName()] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[mf.GetName()] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[mf.GetName()] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

var runs atomic.Int64

func TestMetricsAndLogs(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := leader.Register(reg); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := leader.NewElector(fakedriver.New().Driver(), leader.Options{Logger: log})
	duty := fmt.Sprintf("metrics-%d", runs.Add(1)) // the collectors are package-wide
	p := leader.Params{Name: duty, Replica: "r1", Lease: 150 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	inTerm, resign, done := make(chan map[string]float64), make(chan struct{}), make(chan error)
	go func() {
		done <- e.Lead(ctx, p, func(ctx context.Context, term leader.Term) {
			time.Sleep(p.Lease) // renews at least twice
			inTerm <- gather(t, reg, duty)
			<-resign
		})
	}()
	during := <-inTerm
	close(resign)
	// After the hand-over the replica cools down; the term is over.
	deadline := time.Now().Add(5 * time.Second)
	for gather(t, reg, duty)["slotcron_leader"] != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	after := gather(t, reg, duty)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Lead: %v", err)
	}
	if during["slotcron_leader"] != 1 || during["slotcron_leadership_changes_total"] != 1 || during["slotcron_leader_renewal_seconds"] < 2 {
		t.Errorf("during the term: %v, want leader 1, changes 1, renewals ≥ 2", during)
	}
	if after["slotcron_leader"] != 0 {
		t.Errorf("after the term: %v, want leader 0", after)
	}

	var acquired, lost, renewed map[string]any
	for _, r := range buf.records(t) {
		switch r["msg"] {
		case "leadership acquired":
			acquired = r
		case "leadership lost":
			lost = r
		case "lease renewed":
			renewed = r
		}
	}
	for name, r := range map[string]map[string]any{"acquired": acquired, "lost": lost, "renewed": renewed} {
		if r == nil || r["duty"] != duty || r["replica"] != "r1" || r["fence"] != 1.0 {
			t.Errorf("leadership %s line %v, want duty, replica r1 and fence 1", name, r)
		}
	}
	if lost != nil && lost["reason"] != "resigned" {
		t.Errorf("lost reason %v, want resigned", lost["reason"])
	}
}

func TestParams(t *testing.T) {
	e := leader.NewElector(fakedriver.New().Driver(), quiet)
	ok := leader.Params{Name: "n", Replica: "r", Lease: time.Second}
	for name, edit := range map[string]func(*leader.Params){
		"empty name":      func(p *leader.Params) { p.Name = "" },
		"empty replica":   func(p *leader.Params) { p.Replica = "" },
		"short lease":     func(p *leader.Params) { p.Lease = leader.MinLease - 1 },
		"margin too wide": func(p *leader.Params) { p.Margin = p.Lease / 2 },
		"negative margin": func(p *leader.Params) { p.Margin = -1 },
		"negative cool":   func(p *leader.Params) { p.Cooldown = -1 },
	} {
		p := ok
		edit(&p)
		if err := e.Lead(t.Context(), p, nil); !errors.Is(err, leader.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if got := leader.DefaultMargin(time.Second); got != 100*time.Millisecond {
		t.Errorf("DefaultMargin(1s) = %v", got)
	}
	if got := leader.DefaultMargin(50 * time.Millisecond); got != 10*time.Millisecond {
		t.Errorf("DefaultMargin(50ms) = %v", got)
	}
}
