// The series a scrape computes rather than the engine keeps: the zeros of
// counters a scheduled job has not made yet, each job's schedule interval,
// and the pauses this replica last read. A job costs no series in a
// vector until it has one of its own.

package engine

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/slotstore"
)

// scheduleMark is what scheduled leaves on a job for scrapes: its zero
// value is a job not scheduled; then the job's schedule interval, or
// noInterval for a schedule with no two slots in its horizon.
type scheduleMark struct{ v atomic.Int64 }

const noInterval = -1

// set marks the job scheduled with interval d (0 for none), and reports
// whether it was not before.
func (s *scheduleMark) set(d time.Duration) bool {
	v := int64(d)
	if v <= 0 {
		v = noInterval
	}
	return s.v.Swap(v) == 0
}

// interval is the job's schedule interval, 0 when it was not scheduled or
// has none.
func (s *scheduleMark) interval() time.Duration { return time.Duration(max(s.v.Load(), 0)) }

// scheduledJobs are the jobs of this engine that Run scheduled, each once.
// A slice only grows, so a snapshot taken under the lock stays valid.
type scheduledJobs struct {
	mu    sync.Mutex
	plans []*plan
}

func (j *scheduledJobs) add(p *plan) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.plans = append(j.plans, p)
}

// remove drops p, a plan a reload retired: a new slice, so snapshots taken
// before stay valid.
func (j *scheduledJobs) remove(p *plan) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if i := slices.Index(j.plans, p); i >= 0 {
		j.plans = slices.Delete(slices.Clone(j.plans), i, i+1)
	}
}

func (j *scheduledJobs) all() []*plan {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.plans[:len(j.plans):len(j.plans)]
}

// zeroed is a counter vector whose collection also reports, at 0, the
// series of every scheduled job that the vector has not made yet: one for
// each of values in label, or with label "" the job's one series. A scrape
// shows what the vector alone would show had scheduled made them, at the
// cost of a few allocations per zero per scrape rather than a series kept
// per job.
type zeroed struct {
	vec    *prometheus.CounterVec
	desc   *prometheus.Desc
	jobs   *scheduledJobs
	label  string
	values []string
}

var _ prometheus.Collector = (*zeroed)(nil)

func newZeroed(vec *prometheus.CounterVec, jobs *scheduledJobs, label string, values ...string) *zeroed {
	ch := make(chan *prometheus.Desc, 1) // a vector has one
	vec.Describe(ch)
	if label == "" {
		values = []string{""}
	}
	return &zeroed{vec: vec, desc: <-ch, jobs: jobs, label: label, values: values}
}

func (z *zeroed) Describe(ch chan<- *prometheus.Desc) { z.vec.Describe(ch) }

// Collect reports the vector's series, then the zeros of the jobs that
// have none of theirs among them. The vector collects under its lock, so a
// series made during the scrape is either among its series or made after
// them, and then the job's 0 stands in for it this once: each job's series
// appear exactly once.
func (z *zeroed) Collect(ch chan<- prometheus.Metric) {
	made := z.forward(ch)
	for _, p := range z.jobs.all() {
		have := made[p.name]
		for i, v := range z.values {
			if have&(1<<i) != 0 {
				continue
			}
			if z.label == "" {
				ch <- prometheus.MustNewConstMetric(z.desc, prometheus.CounterValue, 0, p.name)
			} else {
				ch <- prometheus.MustNewConstMetric(z.desc, prometheus.CounterValue, 0, p.name, v)
			}
		}
	}
}

// forward sends the vector's series to ch, and returns which of those
// Collect would add each job has: bit i for values[i].
func (z *zeroed) forward(ch chan<- prometheus.Metric) map[string]uint8 {
	series := make(chan prometheus.Metric, 256)
	go func() {
		z.vec.Collect(series)
		close(series)
	}()
	made := map[string]uint8{}
	var d dto.Metric
	for m := range series {
		ch <- m
		d.Reset()
		if m.Write(&d) != nil {
			continue // the registry reports it, as it writes it again
		}
		var job, value string
		for _, l := range d.GetLabel() {
			switch l.GetName() {
			case jobLabel:
				job = l.GetValue()
			case z.label:
				value = l.GetValue()
			}
		}
		for i, v := range z.values {
			if v == value {
				made[job] |= 1 << i
			}
		}
	}
	return made
}

// planGauge is a gauge of each scheduled job, read from the job at scrape
// time: value says the job's, or that it has none.
type planGauge struct {
	desc  *prometheus.Desc
	jobs  *scheduledJobs
	value func(*plan) (float64, bool)
}

var _ prometheus.Collector = (*planGauge)(nil)

func (g *planGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *planGauge) Collect(ch chan<- prometheus.Metric) {
	for _, p := range g.jobs.all() {
		if v, ok := g.value(p); ok {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, p.name)
		}
	}
}

// intervalGauge is slotcron_schedule_interval_seconds: the interval of
// each scheduled job that has one, as scheduled left it on the job.
func intervalGauge(desc *prometheus.Desc, jobs *scheduledJobs) *planGauge {
	return &planGauge{desc: desc, jobs: jobs, value: func(p *plan) (float64, bool) {
		d := p.mark.interval()
		return d.Seconds(), d > 0
	}}
}

// nextRunGauge is slotcron_next_run_timestamp_seconds: the nominal time
// of each scheduled job's next slot, as the loop left it on the job. A
// schedule held as data is not a scheduled job: a gauge per registered
// job cannot say each schedule's.
func nextRunGauge(desc *prometheus.Desc, jobs *scheduledJobs) *planGauge {
	return &planGauge{desc: desc, jobs: jobs, value: func(p *plan) (float64, bool) {
		ms := p.nextRun.Load()
		return float64(ms) / 1e3, ms != 0
	}}
}

// intervalCache holds the intervals of the schedules seen since now last
// changed: a start-up judges every job from one instant, and jobs with one
// spec share its parsed schedule, so each spec is walked once. It holds at
// most maxCachedIntervals, and starts afresh when full: it outlives the
// start-up, and jobs with a spec each would keep one entry a job for
// nothing.
type intervalCache struct {
	mu  sync.Mutex
	now time.Time
	by  map[*schedule.Schedule]time.Duration
}

const maxCachedIntervals = 1024

func (c *intervalCache) of(s *schedule.Schedule, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !now.Equal(c.now) || c.by == nil {
		c.now, c.by = now, make(map[*schedule.Schedule]time.Duration)
	}
	d, ok := c.by[s]
	if !ok {
		d = interval(s, now)
		if len(c.by) == maxCachedIntervals {
			clear(c.by)
		}
		c.by[s] = d
	}
	return d
}

// How far interval looks: intervalSlots consecutive slots, and the gaps
// that span each of intervalDays midnights.
const (
	intervalSlots = 8
	intervalDays  = 8
)

// interval is the longest gap between consecutive slots of s after now:
// an @every spec's interval; for a cron spec, the longest gap among its next
// intervalSlots slots and among the gaps that span each of the next
// intervalDays midnights of its time zone. The slots cover a schedule's
// rhythm across days, weeks or months ("0 9 * * 1-5" has a weekend gap);
// the midnights cover a schedule with many slots a day and a quiet night
// or weekend ("*/15 9-17 * * 1-5"). What neither sees is a long gap inside
// a day of more than intervalSlots slots ("* 0-8,20 * * *" waits from 8:59
// to 20:00). It is 0 when s has fewer than two slots in its horizon.
func interval(s *schedule.Schedule, now time.Time) time.Duration {
	if d := s.Every(); d > 0 {
		return d
	}
	first := s.Next(now)
	if first.IsZero() {
		return 0
	}
	var longest time.Duration
	last := first
	for range intervalSlots - 1 {
		next := s.Next(last)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(last))
		last = next
	}
	// The midnights after the slots walked, up to intervalDays after the
	// first: the gap around each is that between the slots either side of
	// the second before it; a midnight inside a gap already measured is
	// skipped.
	loc := s.Location()
	end := first.AddDate(0, 0, intervalDays)
	for t := last.In(loc); t.Before(end); {
		y, mo, d := t.Date()
		midnight := time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		before := midnight.Add(-time.Second)
		prev, next := s.Prev(before), s.Next(before)
		if prev.IsZero() || next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		t = next.In(loc)
		if !t.After(midnight) {
			t = midnight
		}
	}
	return longest
}

// pausedGauge shows the pauses this replica last read: slotcron_cluster_paused,
// and slotcron_job_paused for each paused job of its configuration (known),
// with slotcron_job_paused_by_slotcron when the pause's note says slotcron
// set it. Alerts about a job's missing successes leave out the jobs paused
// on purpose by it; every replica shows a pause on failure for as long as
// it lasts, whichever replica set it.
type pausedGauge struct {
	pauses             *atomic.Pointer[slotstore.Pauses]
	known              func(job string) bool
	cluster, job, bySC *prometheus.Desc
}

var _ prometheus.Collector = (*pausedGauge)(nil)

func (g *pausedGauge) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.cluster
	ch <- g.job
	ch <- g.bySC
}

func (g *pausedGauge) Collect(ch chan<- prometheus.Metric) {
	ps := g.pauses.Load()
	if ps == nil {
		return // not read yet: neither paused nor not
	}
	all := 0.0
	if ps.All {
		all = 1
	}
	ch <- prometheus.MustNewConstMetric(g.cluster, prometheus.GaugeValue, all)
	for _, j := range ps.Jobs {
		if g.known == nil || g.known(j) {
			ch <- prometheus.MustNewConstMetric(g.job, prometheus.GaugeValue, 1, j)
			if ps.Notes[j].By == autoPauseBy {
				ch <- prometheus.MustNewConstMetric(g.bySC, prometheus.GaugeValue, 1, j)
			}
		}
	}
}
