package driver_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/leader/internal/fakedriver"
)

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

// The metrics and the log lines of one term, on synctest's clock: won at 0,
// renewed at every Lease/3, resigned at Lease.
func TestMetricsAndLogs(t *testing.T) {
	synctest.Test(t, testMetricsAndLogs)
}

func testMetricsAndLogs(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := leader.Register(reg); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	var buf testlog.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := driver.NewElector(fakedriver.New().Driver(), driver.Options{Logger: log})
	duty := fmt.Sprintf("metrics-%d", runs.Add(1)) // the collectors are package-wide
	p := leader.Params{Name: duty, Replica: "r1", Lease: 150 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	inTerm, resign, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- e.Lead(ctx, p, func(ctx context.Context, term leader.Term) {
			close(inTerm)
			<-resign
		})
	}()
	<-inTerm
	time.Sleep(p.Lease)
	synctest.Wait() // the renewal due at Lease is done too
	during := gather(t, reg, duty)
	close(resign)
	synctest.Wait() // the term is over; the replica cools down
	after := gather(t, reg, duty)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Lead: %v", err)
	}
	if during["slotcron_leader"] != 1 || during["slotcron_leadership_changes_total"] != 1 || during["slotcron_leader_renewal_seconds"] != 3 {
		t.Errorf("during the term: %v, want leader 1, changes 1, renewals 3", during)
	}
	if after["slotcron_leader"] != 0 || after["slotcron_leadership_changes_total"] != 1 {
		t.Errorf("after the term: %v, want leader 0, changes 1", after)
	}

	var acquired, lost, renewed map[string]any
	for _, r := range buf.Records(t) {
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
