package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// BenchmarkDispatchDelay reports the dispatch delay (a run's start less its
// due instant: the slot plus the job's jitter) of jobs due every second, on
// a memory store: twenty jobs due at distinct instants of each second
// (jitter 0, 50 ms, ...) give twenty samples a second. sleep's doc holds
// the figures that decided the loop waits on its timer alone. Run it with
// -benchtime 1x.
func BenchmarkDispatchDelay(b *testing.B) {
	var d []time.Duration
	for b.Loop() {
		d = append(d, dispatchRound(b, 30*time.Second, 20, 50*time.Millisecond, testLogger())...)
	}
	reportDelays(b, d)
}

// BenchmarkBurstDelay is BenchmarkDispatchDelay for a burst: 1,667 jobs due
// every second at the same instant (the slots of a second of 100,000 jobs
// spread over the minute), writing their lines at INFO as text to
// io.Discard. Run it with -benchtime 1x.
func BenchmarkBurstDelay(b *testing.B) {
	var d []time.Duration
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for b.Loop() {
		d = append(d, dispatchRound(b, 20*time.Second, 1667, 0, log)...)
	}
	reportDelays(b, d)
}

// reportDelays reports the quantiles of the dispatch delays d.
func reportDelays(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		b.Fatal("no runs")
	}
	slices.Sort(d)
	q := func(f float64) float64 { return float64(d[int(f*float64(len(d)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.Logf("%d runs, p50 %.3f ms, p99 %.3f ms, max %.3f ms", len(d), q(0.5), q(0.99), q(1))
}

// dispatchRound runs n jobs due every second for d on a memory store, job
// i at jitter i × step, logging to log, and returns their dispatch delays.
func dispatchRound(b *testing.B, d time.Duration, n int, step time.Duration, log *slog.Logger) []time.Duration {
	sched, err := schedule.Parse("* * * * * *", "UTC")
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var delays []time.Duration
	var specs []JobSpec
	// Slots due at start are caught up, not dispatched on time: only later
	// ones count.
	from := time.Now().Add(time.Second)
	for i := range n {
		jitter := time.Duration(i) * step
		j := job(fmt.Sprintf("j%d", i), func(_ context.Context, run jobs.Run) error {
			late := time.Since(run.Slot.Add(jitter))
			if run.Slot.Before(from) {
				return nil
			}
			mu.Lock()
			delays = append(delays, late)
			mu.Unlock()
			return nil
		})
		j.Schedule, j.Jitter, j.CatchUp = sched, jitter, policy.CatchUpNone
		specs = append(specs, j)
	}
	e, err := New(Config{Replica: "a", Incarnation: "bench", Log: log, Now: time.Now, Grace: time.Second, Jobs: specs})
	if err != nil {
		b.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	var runs sync.WaitGroup
	l := newLoop(e, st, context.Background(), &runs)
	l.run(ctx)
	runs.Wait()
	mu.Lock()
	defer mu.Unlock()
	return delays
}
