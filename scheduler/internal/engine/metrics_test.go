package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// gather returns every series of reg as "name,label=value,..." and its value
// (a histogram's sample count).
func gather(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
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
			case mt.Gauge != nil:
				got[key] = mt.GetGauge().GetValue()
			case mt.Histogram != nil:
				got[key] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	return got
}

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
		got := gather(t, reg)
		for k := range got {
			if strings.HasPrefix(k, "slotcron_build_info,") || k == "slotcron_store_up" {
				delete(got, k) // the replica's own, checked elsewhere
			}
		}
		want := map[string]float64{
			"slotcron_claims_total,job_name=a,result=won":      3,
			"slotcron_claims_total,job_name=b,result=held":     1,
			"slotcron_claims_total,job_name=b,result=error":    1,
			"slotcron_runs_total,job_name=a,outcome=succeeded": 1,
			"slotcron_runs_total,job_name=a,outcome=released":  1,
			"slotcron_timer_lag_seconds":                       0, // the replica's own, always there
			"slotcron_slots_unaccounted":                       0, // likewise
			"slotcron_runs_in_flight":                          0, // likewise
			"slotcron_startup_duration_seconds":                0, // likewise; no Run here
		}
		if perJob {
			want["slotcron_dispatch_delay_seconds,job_name=a"] = 1
			want["slotcron_dispatch_delay_seconds,job_name=b"] = 1
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

// Scheduling a job makes, at 0, the series the alerts take increase() of,
// and its schedule interval; a job's other series still wait for their
// first use, and reasons of missed slots are not made in advance. Once the
// job makes one of those series, a scrape shows it in place of the 0, and
// a job scheduled again still has each series once. The registry is
// pedantic: what a scrape shows must match what the collectors describe.
func TestScheduledJobSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	daily := job("daily", (&recorder{}).fn)
	daily.Schedule = mustSchedule(t, "0 9 * * 1-5")
	every := job("every", (&recorder{}).fn)
	every.Schedule = mustSchedule(t, "@every 30s")
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: []JobSpec{daily, every}, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for k := range gather(t, reg) {
		if strings.Contains(k, "job_name=") {
			t.Errorf("series %s before the jobs were scheduled", k)
		}
	}
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &sync.WaitGroup{})
	now := time.Now()
	for _, p := range e.jobs().plans {
		l.schedule(p, now, slotstore.Generation{})
	}
	got := gather(t, reg)
	var perJob []string
	for k := range got {
		if strings.Contains(k, "job_name=") {
			perJob = append(perJob, k)
		}
	}
	for _, name := range []string{"daily", "every"} {
		for _, k := range []string{
			"slotcron_runs_total,job_name=" + name + ",outcome=failed",
			"slotcron_runs_total,job_name=" + name + ",outcome=timeout",
			"slotcron_leases_lost_total,job_name=" + name,
		} {
			if v, ok := got[k]; !ok || v != 0 {
				t.Errorf("%s = %v (present %v), want 0", k, v, ok)
			}
		}
		if _, ok := got["slotcron_next_run_timestamp_seconds,job_name="+name]; !ok {
			t.Errorf("no next run series for %s", name)
		}
	}
	if v := got["slotcron_schedule_interval_seconds,job_name=daily"]; v != 72*3600 {
		t.Errorf("daily interval %v s, want the weekend's 259200", v)
	}
	if v := got["slotcron_schedule_interval_seconds,job_name=every"]; v != 30 {
		t.Errorf("every interval %v s, want 30", v)
	}
	// Per job: failed, timeout, leases lost, next run, interval.
	if len(perJob) != 2*5 {
		t.Errorf("per-job series %v, want 5 a job", perJob)
	}

	p := e.jobs().byName["daily"]
	e.metrics.run(p, EndFailed).Inc()
	e.metrics.leaseLost(p).Add(2)
	l.schedule(p, now, slotstore.Generation{})
	got = gather(t, reg)
	for k, want := range map[string]float64{
		"slotcron_runs_total,job_name=daily,outcome=failed":  1,
		"slotcron_runs_total,job_name=daily,outcome=timeout": 0,
		"slotcron_leases_lost_total,job_name=daily":          2,
		"slotcron_runs_total,job_name=every,outcome=failed":  0,
		"slotcron_schedule_interval_seconds,job_name=daily":  72 * 3600,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("after daily's first failure: %s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if n := countPerJob(got); n != 2*5 {
		t.Errorf("after daily's first failure: %d per-job series, want 10 (all: %v)", n, got)
	}
}

// countPerJob is how many of the series gather returned name a job.
func countPerJob(got map[string]float64) int {
	n := 0
	for k := range got {
		if strings.Contains(k, "job_name=") {
			n++
		}
	}
	return n
}

// Jobs are scheduled and make their series while the registry is scraped,
// each step just as a scrape begins: every scrape succeeds (a series
// reported twice would fail it), shows each series of a job scheduled
// before it began, and never shows a counter lower than an earlier scrape
// did, nor loses a series.
func TestScheduledSeriesUnderScrapes(t *testing.T) {
	const n, spread = 200, 20
	reg := prometheus.NewPedanticRegistry()
	every := mustSchedule(t, "@every 30s")
	specs := make([]JobSpec, n)
	for i := range specs {
		specs[i] = job(fmt.Sprintf("j%03d", i), (&recorder{}).fn)
		specs[i].Schedule = every
	}
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: specs, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	m := e.metrics

	// The scrapes begun, which each step waits for.
	var (
		mu      sync.Mutex
		begun   = sync.NewCond(&mu)
		scrapes int
		stopped bool
	)
	waitScrape := func(k int) bool {
		mu.Lock()
		defer mu.Unlock()
		for scrapes < k && !stopped {
			begun.Wait()
		}
		return !stopped
	}
	var scheduled [n]atomic.Bool
	var wg sync.WaitGroup
	defer func() {
		mu.Lock()
		stopped = true
		begun.Broadcast()
		mu.Unlock()
		wg.Wait()
	}()
	for i, p := range e.jobs().plans {
		makes := []func() prometheus.Counter{
			func() prometheus.Counter { return m.run(p, EndFailed) },
			func() prometheus.Counter { return m.run(p, EndTimedOut) },
			func() prometheus.Counter { return m.leaseLost(p) },
		}
		rand.Shuffle(len(makes), func(a, b int) { makes[a], makes[b] = makes[b], makes[a] })
		wg.Go(func() {
			at := 1 + i%spread
			if !waitScrape(at) {
				return
			}
			m.scheduled(p, time.Now())
			scheduled[i].Store(true)
			for _, mk := range makes {
				at++
				if !waitScrape(at) {
					return
				}
				mk().Inc()
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()

	keys := func(job string) []string {
		return []string{
			"slotcron_runs_total,job_name=" + job + ",outcome=failed",
			"slotcron_runs_total,job_name=" + job + ",outcome=timeout",
			"slotcron_leases_lost_total,job_name=" + job,
			"slotcron_schedule_interval_seconds,job_name=" + job,
		}
	}
	last := map[string]float64{}
	for {
		var finished bool
		select {
		case <-done:
			finished = true
		default:
		}
		var before [n]bool
		for i := range before {
			before[i] = scheduled[i].Load()
		}
		mu.Lock()
		scrapes++
		begun.Broadcast()
		mu.Unlock()
		got := gather(t, reg)
		for i, p := range e.jobs().plans {
			for _, k := range keys(p.name) {
				v, ok := got[k]
				was, seen := last[k]
				switch {
				case !ok && (before[i] || seen):
					t.Fatalf("scrape %d: no %s", scrapes, k)
				case ok && v < was:
					t.Fatalf("scrape %d: %s = %v, down from %v", scrapes, k, v, was)
				case ok:
					last[k] = v
				}
			}
		}
		if finished {
			for _, p := range e.jobs().plans {
				for _, k := range keys(p.name)[:3] {
					if got[k] != 1 {
						t.Errorf("last scrape: %s = %v, want 1", k, got[k])
					}
				}
			}
			if c := countPerJob(got); c != n*4 {
				t.Errorf("last scrape: %d per-job series, want %d", c, n*4)
			}
			t.Logf("%d scrapes", scrapes)
			return
		}
	}
}

// A job's mark tells a job scheduled from one not, and keeps its interval
// if it has one.
func TestScheduleMark(t *testing.T) {
	var s scheduleMark
	if d := s.interval(); d != 0 {
		t.Errorf("unscheduled: interval %v, want 0", d)
	}
	if !s.set(0) || s.set(0) || s.set(time.Minute) {
		t.Error("set reported a job scheduled as newly so, or the first time as not")
	}
	if d := s.interval(); d != time.Minute {
		t.Errorf("interval %v, want 1m", d)
	}
	var none scheduleMark
	none.set(0)
	if d := none.interval(); d != 0 {
		t.Errorf("a schedule with no interval: %v, want 0", d)
	}
}

// The interval is the longest gap between consecutive slots, weekends,
// nights and DST days included.
func TestScheduleInterval(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// A Tuesday morning, five days before Berlin's clocks go back.
	tue := time.Date(2026, 10, 20, 10, 0, 0, 0, berlin)
	for _, tc := range []struct {
		spec, tz string
		from     time.Time
		want     time.Duration
	}{
		{"@every 90s", "", tue, 90 * time.Second},
		{"* * * * *", "", tue, time.Minute},
		// The weekend, one hour longer as the clocks go back.
		{"0 9 * * 1-5", "Europe/Berlin", tue, 73 * time.Hour},
		{"0 9 * * 1-5", "UTC", tue, 72 * time.Hour},
		// Every quarter of an hour on weekdays from 9:00 to 17:45: the
		// weekend, Friday 17:45 to Monday 9:00 (one hour more as the clocks
		// go back), is far beyond the slots walked.
		{"*/15 9-17 * * 1-5", "Europe/Berlin", tue, 64*time.Hour + 15*time.Minute},
		{"*/15 9-17 * * 1-5", "UTC", tue, 63*time.Hour + 15*time.Minute},
		// Two slots a day: the night is the longer gap.
		{"0 9,18 * * *", "UTC", tue, 15 * time.Hour},
		// The day the clocks go back is 25 hours long.
		{"30 2 * * *", "Europe/Berlin", tue, 25 * time.Hour},
		{"0 0 1 * *", "UTC", tue, 31 * 24 * time.Hour},
		{"0 12 29 2 *", "UTC", tue, 4*365*24*time.Hour + 24*time.Hour},
		// One slot in its horizon, then none: no gap to speak of.
		{"0 0 30 2 *", "UTC", tue, 0},
	} {
		s, err := schedule.Parse(tc.spec, tc.tz)
		if err != nil {
			t.Fatal(err)
		}
		if got := interval(s, tc.from); got != tc.want {
			t.Errorf("interval(%q in %q from %v) = %v, want %v", tc.spec, tc.tz, tc.from, got, tc.want)
		}
	}
}

// build_info is 1, labelled with the build as the version command
// describes it; a revision not recorded, or from a tree with changes, says
// so.
func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := newMetrics(false).register(reg, false); err != nil {
		t.Fatal(err)
	}
	in := buildinfo.Read()
	l := buildLabels(in)
	want := "slotcron_build_info,goversion=" + in.GoVersion + ",revision=" + l["revision"] + ",version=" + in.Version
	got := gather(t, reg)
	if got[want] != 1 {
		t.Errorf("%s = %v, want 1 (all: %v)", want, got[want], got)
	}
	t.Logf("%s", want)
	for _, tc := range []struct {
		in   buildinfo.Info
		want string
	}{
		{buildinfo.Info{Version: "(devel)", GoVersion: "go1.26.0"}, "unknown"},
		{buildinfo.Info{Version: "v1.2.0", Revision: "0429171", GoVersion: "go1.26.0"}, "0429171"},
		{buildinfo.Info{Version: "v1.2.0", Revision: "0429171", Modified: true, GoVersion: "go1.26.0"}, "0429171-modified"},
	} {
		l := buildLabels(tc.in)
		if l["revision"] != tc.want || l["version"] != tc.in.Version || l["goversion"] != tc.in.GoVersion {
			t.Errorf("buildLabels(%+v) = %v, want revision %q", tc.in, l, tc.want)
		}
	}
}

// The pauses show in slotcron_cluster_paused and slotcron_job_paused, for
// the jobs of this replica's configuration, within a beat of a change, even
// while no slot is due; nothing shows before the first read.
func TestPausedGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		daily, err := schedule.Parse("0 3 * * *", "UTC")
		if err != nil {
			t.Fatal(err)
		}
		held, other := job("held", nil), job("other", nil)
		held.Schedule, other.Schedule = daily, daily
		e, err := New(Config{Replica: "a", Incarnation: "t", Log: testLogger(), Now: time.Now, Grace: time.Second,
			Jobs: []JobSpec{held, other}, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		if got := gather(t, reg); got["slotcron_cluster_paused"] != 0 || len(filterPrefix(got, "slotcron_job_paused")) != 0 {
			t.Errorf("before any read: %v", got)
		}
		st := memstore.New(memstore.Options{})
		for _, job := range []string{"held", "elsewhere"} { // elsewhere: another replica's job
			if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: job, Paused: true, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		defer func() { stop(); <-ran }()
		time.Sleep(time.Second)
		got := gather(t, reg)
		if _, ok := got["slotcron_cluster_paused"]; !ok || got["slotcron_cluster_paused"] != 0 {
			t.Errorf("cluster not paused: %v", got)
		}
		if want := map[string]float64{"slotcron_job_paused,job_name=held": 1}; fmt.Sprint(filterPrefix(got, "slotcron_job_paused")) != fmt.Sprint(want) {
			t.Errorf("jobs paused: %v, want %v", filterPrefix(got, "slotcron_job_paused"), want)
		}
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Paused: true, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		if err := st.SetPause(context.Background(), slotstore.PauseParams{Job: "held"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(beatEvery + time.Second)
		got = gather(t, reg)
		if got["slotcron_cluster_paused"] != 1 || len(filterPrefix(got, "slotcron_job_paused")) != 0 {
			t.Errorf("after the cluster paused and held resumed: %v", got)
		}
	})
}

// filterPrefix keeps the entries of got whose key begins with prefix.
func filterPrefix(got map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
