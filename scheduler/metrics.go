package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the engine's Prometheus collectors, all prefixed slotcron_.
// Each Scheduler has its own set, registered on its own registry (served at
// /metrics) unless WithRegisterer names another.
type metrics struct {
	claims        *prometheus.CounterVec   // job, result
	runs          *prometheus.CounterVec   // job, outcome
	runDuration   *prometheus.HistogramVec // job
	dispatchDelay *prometheus.HistogramVec // job
	timerLag      prometheus.Histogram
	renewLatency  *prometheus.HistogramVec // job
	leasesLost    *prometheus.CounterVec   // job
	takeovers     *prometheus.CounterVec   // job
	missed        *prometheus.CounterVec   // job, reason
	nextRun       *prometheus.GaugeVec     // job
	lastSuccess   *prometheus.GaugeVec     // job
	storeUp       prometheus.Gauge
}

func newMetrics() *metrics {
	const ns = "slotcron"
	latency := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	return &metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "claims_total",
			Help: "Slot claims by result: won, held, finished, abandoned, absent, error."}, []string{"job", "result"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_total",
			Help: "Runs by outcome: succeeded, failed, timeout, lease_lost, released."}, []string{"job", "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "run_duration_seconds",
			Help: "How long runs took.", Buckets: prometheus.ExponentialBuckets(.01, 4, 10)}, []string{"job"}),
		dispatchDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "dispatch_delay_seconds",
			Help: "Start of a run minus its nominal slot.", Buckets: latency}, []string{"job"}),
		timerLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "timer_lag_seconds",
			Help: "How late the timer loop woke for a due slot.", Buckets: latency}),
		renewLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "lease_renewal_seconds",
			Help: "Latency of lease renewals that succeeded.", Buckets: latency}, []string{"job"}),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "leases_lost_total",
			Help: "Runs whose lease was lost: their job context was cancelled."}, []string{"job"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "takeovers_total",
			Help: "Slots this replica took over from an expired or released claim."}, []string{"job"}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slots_missed_total",
			Help: "Slots not started before their starting deadline, by reason."}, []string{"job", "reason"}),
		nextRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "next_run_timestamp_seconds",
			Help: "Nominal time of the job's next slot."}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "last_success_timestamp_seconds",
			Help: "Nominal slot of the job's last run that succeeded on this replica."}, []string{"job"}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "store_up",
			Help: "1 when the last call to the slot store succeeded, else 0."}),
	}
}

// register adds every collector to r, plus the Go and process collectors
// when withRuntime is set (a private registry).
func (m *metrics) register(r prometheus.Registerer, withRuntime bool) error {
	cs := []prometheus.Collector{m.claims, m.runs, m.runDuration, m.dispatchDelay, m.timerLag, m.renewLatency,
		m.leasesLost, m.takeovers, m.missed, m.nextRun, m.lastSuccess, m.storeUp}
	if withRuntime {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *metrics) storeCall(err error) {
	if err == nil {
		m.storeUp.Set(1)
	} else {
		m.storeUp.Set(0)
	}
}

func seconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
