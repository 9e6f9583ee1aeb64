package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/slotstore"
)

// jobLabel is the label that names the job in every per-job series. It is
// not "job": Prometheus gives every series the scrape job's name under that
// label, and would rename slotcron's to exported_job.
const jobLabel = "job_name"

// metrics are the engine's Prometheus collectors, all prefixed slotcron_.
// Each engine has its own set, registered on the registry its Config
// names.
type metrics struct {
	claims        *prometheus.CounterVec   // job_name, result
	runs          *prometheus.CounterVec   // job_name, outcome
	runDuration   *prometheus.HistogramVec // job_name, when per job
	dispatchDelay *prometheus.HistogramVec // job_name, when per job
	timerLag      prometheus.Histogram
	renewLatency  *prometheus.HistogramVec // job_name, when per job
	perJob        bool                     // the histograms have the job_name label
	leasesLost    *prometheus.CounterVec   // job_name
	takeovers     *prometheus.CounterVec   // job_name
	missed        *prometheus.CounterVec   // job_name, reason
	autoPaused    *prometheus.CounterVec   // job_name
	nextRun       *prometheus.Desc         // job_name; see nextRunGauge
	lastSuccess   *prometheus.GaugeVec     // job_name
	specConflict  *prometheus.GaugeVec     // job_name; see catalog.go
	unaccounted   prometheus.Gauge         // see sweep.go
	interval      *prometheus.Desc         // job_name; see intervalGauge
	storeUp       prometheus.Gauge
	inFlight      prometheus.Gauge // see admit.go
	startup       prometheus.Gauge // see startup.go
	buildInfo     prometheus.Gauge

	// jobs are the jobs Run scheduled, whose series scrapes complete; see
	// scheduled.
	jobs scheduledJobs
	// intervals caches the schedule intervals of one start-up: jobs that
	// share a spec share its parsed schedule.
	intervals intervalCache
	// pauses is the latest read of the pauses, nil before the first, and
	// pausesAt when it was made (Unix nanoseconds); paused shows it.
	pauses   atomic.Pointer[slotstore.Pauses]
	pausesAt atomic.Int64
	paused   pausedGauge
}

func newMetrics(perJob bool) *metrics {
	const ns = "slotcron"
	latency := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	var byJob []string
	if perJob {
		byJob = []string{jobLabel}
	}
	m := &metrics{perJob: perJob,
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "claims_total",
			Help: "Slot claims this replica made, by job and result: won, held (another replica holds a live lease), finished, abandoned, absent (a takeover found no marker), skipped, waiting (a retry not yet due), not yet (the store's clock has not reached the slot), error (the call failed)."}, []string{jobLabel, "result"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_total",
			Help: "Runs this replica ended, by job and outcome: succeeded, failed, timeout, lease_lost (the lease passed to another replica, or the outcome could not be recorded), released (handed back at shutdown), replaced (superseded by overlap replace), retrying (failed; a retry is due)."}, []string{jobLabel, "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "run_duration_seconds",
			Help: "How long runs took, in seconds, from the job's start to its return.", Buckets: prometheus.ExponentialBuckets(.01, 4, 10)}, byJob),
		dispatchDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "dispatch_delay_seconds",
			Help: "Start of a run minus its nominal slot (jitter included), in seconds.", Buckets: latency}, byJob),
		timerLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "timer_lag_seconds",
			Help: "How late the timer loop woke for a due slot, in seconds.", Buckets: latency}),
		renewLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "lease_renewal_seconds",
			Help: "Round-trip time of the lease renewals that succeeded, in seconds (failed renewals count in leases_lost_total once the lease is lost).", Buckets: latency}, byJob),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "leases_lost_total",
			Help: "Runs whose lease this replica lost (renewal refused, or not renewed within the trust window): their job context was cancelled."}, []string{jobLabel}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "takeovers_total",
			Help: "Slots this replica took over from an expired or released claim."}, []string{jobLabel}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slots_missed_total",
			Help: "Slots this replica recorded as not run (each slot is counted by the one replica whose record made it), by job and reason: late, store unavailable, down (no replica ran them), paused, catch up (left by the job's catch_up policy), overlap, data loss; and retry window closed (a retry this replica watched was not run in time)."}, []string{jobLabel, "reason"}),
		autoPaused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "jobs_auto_paused_total",
			Help: "Times this replica paused a job after pause_after_failures failed slots in a row (the replica whose failed slot reached the count pauses it; the pause's note says by slotcron, with the count and the last error)."}, []string{jobLabel}),
		nextRun: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "next_run_timestamp_seconds"),
			"Nominal time of the job's next slot, in Unix seconds.", []string{jobLabel}, nil),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "last_success_timestamp_seconds",
			Help: "Nominal slot of the job's last run that succeeded on this replica, in Unix seconds."}, []string{jobLabel}),
		specConflict: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "job_spec_conflict",
			Help: "1 while this replica's spec of the job is not the spec in force in the store's catalog, so it claims none of the job's slots; 0 once it is again. A job that never conflicted has no series."}, []string{jobLabel}),
		unaccounted: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "slots_unaccounted",
			Help: "Slots of the last 15 minutes whose starting window had closed with no record (no replica ran, skipped or recorded them missed), found by this replica's last sweep; it then records them missed (reason down). Only the sweeping replica (the live one first by name) reports more than 0; 0 in steady state."}),
		interval: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "schedule_interval_seconds"),
			"The longest gap between consecutive slots of the job's schedule, in seconds, as seen when the replica started: an @every spec's interval; for a cron spec the longest among its next 8 slots and the gaps that span each of the next 8 midnights of its time zone. The yardstick of \"no recent success\" alerts.", []string{jobLabel}, nil),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "runs_in_flight",
			Help: "Runs this replica has going, triggered and backfilled ones included; at max_running, due slots wait for room."}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "store_up",
			Help: "1 when the last call to the slot store succeeded, else 0."}),
		startup: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "startup_duration_seconds",
			Help: "Seconds the last start-up of this replica took, from Run to every job enrolled and scheduled (its schedules held as data read); 0 while the first is under way. Slots come due and run during a start-up, the jobs whose next slot is soonest scheduled first."}),
		buildInfo: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "build_info",
			Help:        "Always 1; its labels name the build, as the version command does: version (slotcron's module version; \"(devel)\" for a build from a working tree), goversion, and revision (the version-control revision the binary was built from, \"-modified\" appended for a tree with changes; \"unknown\" when not recorded).",
			ConstLabels: buildLabels(buildinfo.Read())}),
	}
	m.buildInfo.Set(1)
	m.paused = pausedGauge{pauses: &m.pauses,
		cluster: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "cluster_paused"),
			"1 while the whole cluster is paused, else 0, as this replica last read the pauses (every 5 s, and ahead of due slots).", nil, nil),
		job: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "job_paused"),
			"1 for each job paused on its own, as this replica last read the pauses; a job that is not paused has no series.", []string{jobLabel}, nil),
		bySC: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "job_paused_by_slotcron"),
			"1 for each job paused on its own whose pause slotcron set after pause_after_failures failed slots (its note says by slotcron), as this replica last read the pauses; every replica shows it while the pause lasts.", []string{jobLabel}, nil)}
	return m
}

// register adds every collector to r, plus the Go and process collectors
// when withRuntime is set (a private registry). runs_total and
// leases_lost_total go in as zeroed, the schedule interval as
// intervalGauge: what scheduled makes of a job costs its heap only in a
// scrape.
func (m *metrics) register(r prometheus.Registerer, withRuntime bool) error {
	runs := newZeroed(m.runs, &m.jobs, "outcome", string(EndFailed), string(EndTimedOut))
	leasesLost := newZeroed(m.leasesLost, &m.jobs, "")
	interval, next := intervalGauge(m.interval, &m.jobs), nextRunGauge(m.nextRun, &m.jobs)
	cs := []prometheus.Collector{m.claims, runs, m.runDuration, m.dispatchDelay, m.timerLag, m.renewLatency,
		leasesLost, m.takeovers, m.missed, m.autoPaused, next, m.lastSuccess, m.specConflict, m.unaccounted, interval, m.storeUp, m.inFlight, m.startup, m.buildInfo, &m.paused}
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
// a job that never runs costs no series: the zeros a scrape shows for a
// scheduled job are not kept (see zeroed).
type jobMetrics struct {
	claims      [maxStatus + 1]series[prometheus.Counter] // by slotstore.Status; 0 is "error"
	runs        [len(runEnds)]series[prometheus.Counter]
	takeovers   series[prometheus.Counter]
	leasesLost  series[prometheus.Counter]
	lastSuccess series[prometheus.Gauge]
	// newest is the slot lastSuccess shows, in Unix milliseconds: a run of
	// an older slot (a backfill, a late retry) never moves it back.
	newestMu      sync.Mutex
	newest        int64
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
	return m.of(p).claims[i].get(func() prometheus.Counter { return m.claims.WithLabelValues(p.metricJob(), result) })
}

func (m *metrics) run(p *plan, e End) prometheus.Counter {
	for i, end := range runEnds {
		if end == e {
			return m.of(p).runs[i].get(func() prometheus.Counter { return m.runs.WithLabelValues(p.metricJob(), string(e)) })
		}
	}
	return m.runs.WithLabelValues(p.metricJob(), string(e))
}

func (m *metrics) takeover(p *plan) prometheus.Counter {
	return m.of(p).takeovers.get(func() prometheus.Counter { return m.takeovers.WithLabelValues(p.metricJob()) })
}

func (m *metrics) leaseLost(p *plan) prometheus.Counter {
	return m.of(p).leasesLost.get(func() prometheus.Counter { return m.leasesLost.WithLabelValues(p.metricJob()) })
}

// autoPause is p's count of pauses on failure; rare, so not kept on p.
func (m *metrics) autoPause(p *plan) prometheus.Counter {
	return m.autoPaused.WithLabelValues(p.metricJob())
}

// next notes next as p's next slot, for nextRunGauge: a store on the job,
// not a series' lookup and write, on every slot.
func (m *metrics) next(p *plan, next time.Time) { p.nextRun.Store(next.UnixMilli()) }

// succeeded records that a run of slot of p succeeded: the job's
// last-success gauge moves to slot unless it shows a newer one already.
func (m *metrics) succeeded(p *plan, slot time.Time) {
	if p.run != "" {
		return // as next: the schedule's page says it
	}
	jm := m.of(p)
	g := jm.lastSuccess.get(func() prometheus.Gauge { return m.lastSuccess.WithLabelValues(p.metricJob()) })
	ms := slot.UnixMilli()
	jm.newestMu.Lock()
	defer jm.newestMu.Unlock()
	if ms > jm.newest {
		jm.newest = ms
		g.Set(seconds(slot))
	}
}

// scheduled gives p the series that must exist before the job runs: at 0,
// those the shipped alerts take increase() of (runs failed and timeout,
// leases lost), so that the first failure or lost lease is an increase
// from 0 rather than the first sample of a new series, which increase()
// cannot see; and its schedule interval, judged from now. The engine calls
// it as it puts the job's first slot in the heap.
//
// Neither is a series kept in a vector: p's interval is kept on p, and p
// joins the jobs whose zeros and interval a scrape reports (zeroed,
// intervalGauge), a few bytes a job.
func (m *metrics) scheduled(p *plan, now time.Time) {
	if p.run != "" {
		p.mark.set(0) // a schedule held as data adds no series, so needs no interval
		return
	}
	if p.mark.set(m.intervals.of(p.sched, now)) {
		m.jobs.add(p)
	}
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
		return h.WithLabelValues(p.metricJob())
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

// buildLabels are the labels of slotcron_build_info: what the version
// command prints, with "unknown" for a revision not recorded and
// "-modified" after one of a tree with changes.
func buildLabels(in buildinfo.Info) prometheus.Labels {
	revision := in.Revision
	switch {
	case revision == "":
		revision = "unknown"
	case in.Modified:
		revision += "-modified"
	}
	return prometheus.Labels{"version": in.Version, "goversion": in.GoVersion, "revision": revision}
}

// notePauses records a read of the pauses for slotcron_*_paused.
func (m *metrics) notePauses(ps slotstore.Pauses) {
	m.pauses.Store(&ps)
	m.pausesAt.Store(time.Now().UnixNano())
}

// pausesAge is how long ago the pauses were last read; a long time if
// never.
func (m *metrics) pausesAge() time.Duration {
	return time.Since(time.Unix(0, m.pausesAt.Load()))
}
