package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// BenchmarkScheduleSeries schedules 100k jobs and reports the heap and time
// per job of what scheduling adds to metrics, against a baseline measured in
// the same run on the same engine:
//
//   - base: what scheduling a job holds besides metrics.scheduled, its fire
//     entry and its next slot, noted on the job for the next-run gauge;
//   - series: what scheduled adds on top, the zero series of the alerts
//     (runs failed and timeout, leases lost) and the schedule interval,
//     which scrapes report from the job;
//   - eager: what the same series cost made eagerly in their vectors, as
//     three counters and a gauge per job with the job's series cache, for
//     comparison;
//   - schedule: the whole of schedule on a fresh engine, which should come
//     to about base + series.
//
// Jobs either share 60 specs, one a second of the minute, as
// BenchmarkNew's do, or each have a daily spec of their own (the interval
// cache cannot help). Run it with -benchtime 1x: each iteration builds two
// engines of 100k jobs.
func BenchmarkScheduleSeries(b *testing.B) {
	const n = 100_000
	for _, bc := range benchSpecs {
		b.Run(bc.name, func(b *testing.B) {
			specs := benchJobs(b, n, bc.spec)
			var base, series, eager, whole heapDelta
			for b.Loop() {
				e, l := benchEngine(b, specs)
				now := time.Now()
				before := liveHeap()
				start := time.Now()
				for _, p := range e.jobs().plans {
					next := p.sched.Next(now)
					l.h.push(&entry{at: next, p: p, slot: next, kind: fire})
					e.metrics.next(p, next)
				}
				base.add(liveHeap()-before, time.Since(start))

				before = liveHeap()
				start = time.Now()
				for _, p := range e.jobs().plans {
					e.metrics.scheduled(p, now)
				}
				series.add(liveHeap()-before, time.Since(start))

				old := newMetrics(false)
				interval := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "interval"}, []string{jobLabel})
				before = liveHeap()
				start = time.Now()
				for _, p := range e.jobs().plans {
					old.run(p, EndFailed)
					old.run(p, EndTimedOut)
					old.leaseLost(p)
					if d := old.intervals.of(p.sched, now); d > 0 {
						interval.WithLabelValues(p.name).Set(d.Seconds())
					}
				}
				eager.add(liveHeap()-before, time.Since(start))
				runtime.KeepAlive(old)
				runtime.KeepAlive(interval)
				runtime.KeepAlive(e)
				runtime.KeepAlive(l)
				e, l = nil, nil

				e, l = benchEngine(b, specs)
				before = liveHeap()
				start = time.Now()
				for _, p := range e.jobs().plans {
					l.schedule(p, now, slotstore.Generation{})
				}
				whole.add(liveHeap()-before, time.Since(start))
				runtime.KeepAlive(e)
				runtime.KeepAlive(l)
			}
			for _, r := range []struct {
				name string
				d    heapDelta
			}{{"base", base}, {"series", series}, {"eager", eager}, {"schedule", whole}} {
				b.ReportMetric(r.d.perJob(n), r.name+"-B/job")
				b.ReportMetric(r.d.nsPerJob(n), r.name+"-ns/job")
			}
		})
	}
}

// BenchmarkGatherScheduled gathers the registry of an engine that
// scheduled 100k jobs: one scrape an op. With zeros, no job has run, so
// scrapes report every job's zero series; with made, every job has made
// those series in the vectors, which scrapes then read back to leave out
// the zeros.
func BenchmarkGatherScheduled(b *testing.B) {
	const n = 100_000
	specs := benchJobs(b, n, benchSpecs[0].spec)
	for _, made := range []bool{false, true} {
		name := "zeros"
		if made {
			name = "made"
		}
		b.Run(name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			e, err := New(Config{Replica: "a", Incarnation: "bench", Log: testLogger(), Now: time.Now, Grace: time.Second,
				Jobs: specs, Registry: reg})
			if err != nil {
				b.Fatal(err)
			}
			l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &sync.WaitGroup{})
			now := time.Now()
			for _, p := range e.jobs().plans {
				l.schedule(p, now, slotstore.Generation{})
				if made {
					e.metrics.run(p, EndFailed)
					e.metrics.run(p, EndTimedOut)
					e.metrics.leaseLost(p)
				}
			}
			var series int
			b.ReportAllocs()
			for b.Loop() {
				fams, err := reg.Gather()
				if err != nil {
					b.Fatal(err)
				}
				series = 0
				for _, f := range fams {
					series += len(f.GetMetric())
				}
			}
			b.ReportMetric(float64(series), "series")
		})
	}
}

// benchSpecs are the schedules of the benchmarks' jobs: 60 specs shared,
// or a spec a job.
var benchSpecs = []struct {
	name string
	spec func(i int) string
}{
	{"shared", func(i int) string { return fmt.Sprintf("%d * * * * *", i%60) }},
	{"distinct", func(i int) string { return fmt.Sprintf("%d %d %d * * *", i%60, i/60%60, i/3600%24) }},
}

// benchJobs are n jobs with the schedules spec names, jobs with one spec
// sharing its parsed schedule.
func benchJobs(b *testing.B, n int, spec func(i int) string) []JobSpec {
	b.Helper()
	parsed := map[string]*schedule.Schedule{}
	specs := make([]JobSpec, n)
	for i := range specs {
		s := spec(i)
		if parsed[s] == nil {
			ps, err := schedule.Parse(s, "")
			if err != nil {
				b.Fatal(err)
			}
			parsed[s] = ps
		}
		specs[i] = job(fmt.Sprintf("job-%06d", i), (&recorder{}).fn)
		specs[i].Schedule = parsed[s]
	}
	return specs
}

// benchEngine builds an engine of specs with a registry of its own, and its
// loop.
func benchEngine(b *testing.B, specs []JobSpec) (*Engine, *loop) {
	b.Helper()
	e, err := New(Config{Replica: "a", Incarnation: "bench", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: specs, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	return e, newLoop(e, memstore.New(memstore.Options{}), context.Background(), &sync.WaitGroup{})
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// heapDelta sums what some iterations added to the heap, and took.
type heapDelta struct {
	bytes int64
	took  time.Duration
	n     int
}

func (d *heapDelta) add(bytes int64, took time.Duration) {
	d.bytes += bytes
	d.took += took
	d.n++
}

func (d *heapDelta) perJob(jobs int) float64 {
	return float64(d.bytes) / float64(d.n) / float64(jobs)
}

func (d *heapDelta) nsPerJob(jobs int) float64 {
	return float64(d.took.Nanoseconds()) / float64(d.n) / float64(jobs)
}
