package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// BenchmarkRunCost is what one slot costs the replica that runs it, from
// its claim to its outcome recorded, at each log level: heap allocations and
// process CPU per slot started, over 1,000 no-op jobs every second on
// memstore, their lines written as text to io.Discard. Each iteration is a
// 3 s window after a 2 s warm-up; run it with -benchtime=1x.
//
//	go test ./scheduler -run '^$' -bench RunCost -benchtime=1x
func BenchmarkRunCost(b *testing.B) {
	for _, level := range []string{"info", "warn"} {
		b.Run(level, func(b *testing.B) {
			var started atomic.Int64
			reg := jobs.NewRegistry()
			reg.Register("noop", func(context.Context, jobs.Run) error { started.Add(1); return nil })
			var conf strings.Builder
			conf.WriteString("shutdown_grace: 1s\ndefaults: {catch_up: none}\njobs:\n")
			for i := range 1000 {
				fmt.Fprintf(&conf, "  j%d: {run: noop, schedule: '* * * * * *'}\n", i)
			}
			cfg, err := Parse("bench.yaml", []byte(conf.String()))
			if err != nil {
				b.Fatal(err)
			}
			var lv slog.Level
			if err := lv.UnmarshalText([]byte(level)); err != nil {
				b.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: lv}))
			s, err := New(cfg, reg, WithStore(memstore.New(memstore.Options{})), WithLogger(log))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			time.Sleep(2 * time.Second)
			var slots, mallocs int64
			var cpu time.Duration
			for b.Loop() {
				n0, m0, c0 := started.Load(), heapObjects(), processCPU(b)
				time.Sleep(3 * time.Second)
				slots += started.Load() - n0
				mallocs += int64(heapObjects() - m0)
				cpu += processCPU(b) - c0
			}
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(mallocs)/float64(max(slots, 1)), "allocs/slot")
			b.ReportMetric(float64(cpu.Microseconds())/float64(max(slots, 1)), "cpu-µs/slot")
		})
	}
}

func heapObjects() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// processCPU is the user and system CPU the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRunInFlightMemory is what one run in flight costs its replica
// before what the job itself holds: the heap and goroutine stack of 10,000
// runs of jobs that wait, less those of one, per run. max_running bounds it.
//
//	go test ./scheduler -run '^$' -bench RunInFlightMemory -benchtime=1x
func BenchmarkRunInFlightMemory(b *testing.B) {
	for b.Loop() {
		h1, s1 := inFlight(b, 1)
		h2, s2 := inFlight(b, 10000)
		b.ReportMetric(float64(h2-h1)/9999, "heap-B/run")
		b.ReportMetric(float64(s2-s1)/9999, "stack-B/run")
	}
}

// inFlight starts 10,000 jobs every second whose runs wait, max_running at
// a time, and returns the live heap and the stacks in use once that many
// run.
func inFlight(b *testing.B, max int) (heap, stacks uint64) {
	var started atomic.Int64
	reg := jobs.NewRegistry()
	reg.Register("wait", func(ctx context.Context, _ jobs.Run) error {
		started.Add(1)
		<-ctx.Done()
		return nil
	})
	var conf strings.Builder
	fmt.Fprintf(&conf, "max_running: %d\nshutdown_grace: 1s\ndefaults: {catch_up: none}\njobs:\n", max)
	for i := range 10000 {
		fmt.Fprintf(&conf, "  j%d: {run: wait, schedule: '* * * * * *'}\n", i)
	}
	cfg, err := Parse("bench.yaml", []byte(conf.String()))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(cfg, reg, WithStore(memstore.New(memstore.Options{})), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for started.Load() < int64(max) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return ms.HeapAlloc, ms.StackInuse
}
