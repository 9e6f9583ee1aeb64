package engine

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/slotcron/slotcron/slotstore"
)

// metrics are the engine's Prometheus collectors, all prefixed slotcron_.
// Each engine has its own set, registered on the registry its Config
// names.
type metrics struct {
	claims        *prometheus.CounterVec   // job, result
	runs          *prometheus.CounterVec   // job, outcome
	runDuration   *prometheus.HistogramVec // job, when per job
	dispatchDelay *prometheus.HistogramVec // job, when per job
	timerLag      prometheus.Histogram
	renewLatency  *prometheus.HistogramVec // job, when per job
	perJob        bool                     // the histograms have the job label
	leasesLost    *prometheus.CounterVec   // job
	takeovers     *prometheus.CounterVec   // job
	missed        *prometheus.CounterVec   // job, reason
	nextRun       *prometheus.GaugeVec     // job
	lastSuccess   *prometheus.GaugeVec     // job
	storeUp       prometheus.Gauge
}

func newMetrics(perJob bool) *metrics {
	const ns = "slotcron"
	latency := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	var byJob []string
	if perJob {
		byJob = []string{"job"}
	}
	return &metrics{perJob: perJob,
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "claims_total",
			Help: "Slot claims this replica made, by job and result: won, held (another replica holds a live lease), finished, abandoned, absent (a takeover found no marker), skipped, waiting (a retry not yet due), not yet (the store's clock has not reached the slot), error (the call failed)."}, []string{"job", "result"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_total",
			Help: "Runs this replica ended, by job and outcome: succeeded, failed, timeout, lease_lost (the lease passed to another replica, or the outcome could not be recorded), released (handed back at shutdown), replaced (superseded by overlap replace), retrying (failed; a retry is due)."}, []string{"job", "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "run_duration_seconds",
			Help: "How long runs took, in seconds, from the job's start to its return.", Buckets: prometheus.ExponentialBuckets(.01, 4, 10)}, byJob),
		dispatchDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "dispatch_delay_seconds",
			Help: "Start of a run minus its nominal slot (jitter included), in seconds.", Buckets: latency}, byJob),
		timerLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "timer_lag_seconds",
			Help: "How late the timer loop woke for a due slot, in seconds.", Buckets: latency}),
		renewLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "lease_renewal_seconds",
			Help: "Round-trip time of the lease renewals that succeeded, in seconds (failed renewals count in leases_lost_total once the lease is lost).", Buckets: latency}, byJob),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "leases_lost_total",
			Help: "Runs whose lease this replica lost (renewal refused, or not renewed within the trust window): their job context was cancelled."}, []string{"job"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "takeovers_total",
			Help: "Slots this replica took over from an expired or released claim."}, []string{"job"}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slots_missed_total",
			Help: "Slots this replica recorded as not run, by job and reason: late, store unavailable, retry window closed, down (no replica ran them), paused, overlap, data loss."}, []string{"job", "reason"}),
		nextRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "next_run_timestamp_seconds",
			Help: "Nominal time of the job's next slot, in Unix seconds."}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "last_success_timestamp_seconds",
			Help: "Nominal slot of the job's last run that succeeded on this replica, in Unix seconds."}, []string{"job"}),
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

// jobMetrics are one job's series, each looked up on its first use and kept,
// so a slot costs an atomic load per series rather than a label lookup, and
// a job that never runs costs no series.
type jobMetrics struct {
	claims        [maxStatus + 1]series[prometheus.Counter] // by slotstore.Status; 0 is "error"
	runs          [len(runEnds)]series[prometheus.Counter]
	takeovers     series[prometheus.Counter]
	leasesLost    series[prometheus.Counter]
	nextRun       series[prometheus.Gauge]
	lastSuccess   series[prometheus.Gauge]
	runDuration   series[prometheus.Observer]
	dispatchDelay series[prometheus.Observer]
	renewLatency  series[prometheus.Observer]
}

// maxStatus is the highest slotstore.Status, the size of jobMetrics.claims.
const maxStatus = int(slotstore.NotYet)

// runEnds are the ends runs_total counts, in jobMetrics.runs order.
var runEnds = [...]End{EndSucceeded, EndFailed, EndTimedOut, EndLeaseLost, EndReleased, EndReplaced, EndRetrying}

// of returns p's series, making them on first use.
func (m *metrics) of(p *plan) *jobMetrics {
	if jm := p.metrics.Load(); jm != nil {
		return jm
	}
	p.metrics.CompareAndSwap(nil, &jobMetrics{})
	return p.metrics.Load()
}

func (m *metrics) claim(p *plan, st slotstore.Status) prometheus.Counter {
	i, result := int(st), st.String()
	if i < 1 || i > maxStatus {
		i, result = 0, "error"
	}
	return m.of(p).claims[i].get(func() prometheus.Counter { return m.claims.WithLabelValues(p.name, result) })
}

func (m *metrics) run(p *plan, e End) prometheus.Counter {
	for i, end := range runEnds {
		if end == e {
			return m.of(p).runs[i].get(func() prometheus.Counter { return m.runs.WithLabelValues(p.name, string(e)) })
		}
	}
	return m.runs.WithLabelValues(p.name, string(e))
}

func (m *metrics) takeover(p *plan) prometheus.Counter {
	return m.of(p).takeovers.get(func() prometheus.Counter { return m.takeovers.WithLabelValues(p.name) })
}

func (m *metrics) leaseLost(p *plan) prometheus.Counter {
	return m.of(p).leasesLost.get(func() prometheus.Counter { return m.leasesLost.WithLabelValues(p.name) })
}

func (m *metrics) next(p *plan) prometheus.Gauge {
	return m.of(p).nextRun.get(func() prometheus.Gauge { return m.nextRun.WithLabelValues(p.name) })
}

func (m *metrics) success(p *plan) prometheus.Gauge {
	return m.of(p).lastSuccess.get(func() prometheus.Gauge { return m.lastSuccess.WithLabelValues(p.name) })
}

func (m *metrics) duration(p *plan) prometheus.Observer {
	return m.of(p).runDuration.get(func() prometheus.Observer { return m.histogram(m.runDuration, p) })
}

func (m *metrics) delay(p *plan) prometheus.Observer {
	return m.of(p).dispatchDelay.get(func() prometheus.Observer { return m.histogram(m.dispatchDelay, p) })
}

func (m *metrics) renewal(p *plan) prometheus.Observer {
	return m.of(p).renewLatency.get(func() prometheus.Observer { return m.histogram(m.renewLatency, p) })
}

// histogram is h's series for p: its own with per-job histograms, else the
// replica's one.
func (m *metrics) histogram(h *prometheus.HistogramVec, p *plan) prometheus.Observer {
	if m.perJob {
		return h.WithLabelValues(p.name)
	}
	return h.WithLabelValues()
}

// series holds one series of a vector once looked up.
type series[T any] struct{ v atomic.Pointer[T] }

// get returns the series, looking it up with mk the first time.
func (c *series[T]) get(mk func() T) T {
	if v := c.v.Load(); v != nil {
		return *v
	}
	v := mk()
	c.v.Store(&v)
	return v
}
