package scheduler

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/slotcron/slotcron/slotstore/memstore"
)

// BenchmarkNew builds a scheduler of 100k jobs spread over the minute, as a
// program registers them in code, and reports the heap each job keeps once
// built (the configuration itself is the caller's and not counted).
func BenchmarkNew(b *testing.B) {
	const n = 100_000
	cfg := &Config{Jobs: make(map[string]JobConfig, n)}
	cfg.Defaults.CatchUp = "none"
	for i := range n {
		cfg.Jobs[fmt.Sprintf("job-%06d", i)] = JobConfig{Schedule: fmt.Sprintf("%d * * * * *", i%60), Run: "hello"}
	}
	reg := demoRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := memstore.New(memstore.Options{})
	var kept *Scheduler
	var before, after runtime.MemStats
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		kept = nil
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		s, err := New(cfg, reg, WithStore(st), WithLogger(log))
		if err != nil {
			b.Fatal(err)
		}
		kept = s
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/job")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/job")
	runtime.KeepAlive(kept)
}
