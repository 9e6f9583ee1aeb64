package engine

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/slotstore"
)

// A job's series are looked up once and counted under its own labels; the
// histograms carry the job only when asked to.
func TestJobMetrics(t *testing.T) {
	for _, perJob := range []bool{false, true} {
		m := newMetrics(perJob)
		reg := prometheus.NewRegistry()
		if err := m.register(reg, false); err != nil {
			t.Fatal(err)
		}
		a, b := &plan{name: "a"}, &plan{name: "b"}
		for range 3 {
			m.claim(a, slotstore.Won).Inc()
		}
		m.claim(b, slotstore.Held).Inc()
		m.claim(b, 0).Inc()
		m.run(a, EndSucceeded).Inc()
		m.run(a, EndReleased).Inc()
		m.delay(a).Observe(0.01)
		m.delay(b).Observe(0.02)
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range fams {
			for _, mt := range f.GetMetric() {
				key := f.GetName()
				for _, l := range mt.GetLabel() {
					key += "," + l.GetName() + "=" + l.GetValue()
				}
				switch {
				case mt.Counter != nil:
					got[key] = mt.GetCounter().GetValue()
				case mt.Histogram != nil:
					got[key] = float64(mt.GetHistogram().GetSampleCount())
				}
			}
		}
		want := map[string]float64{
			"slotcron_claims_total,job=a,result=won":      3,
			"slotcron_claims_total,job=b,result=held":     1,
			"slotcron_claims_total,job=b,result=error":    1,
			"slotcron_runs_total,job=a,outcome=succeeded": 1,
			"slotcron_runs_total,job=a,outcome=released":  1,
			"slotcron_timer_lag_seconds":                  0, // the replica's own, always there
		}
		if perJob {
			want["slotcron_dispatch_delay_seconds,job=a"] = 1
			want["slotcron_dispatch_delay_seconds,job=b"] = 1
		} else {
			want["slotcron_dispatch_delay_seconds"] = 2
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("per job %v: %s = %v, want %v (all: %v)", perJob, k, got[k], v, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("per job %v: series %v, want %v", perJob, got, want)
		}
	}
}
