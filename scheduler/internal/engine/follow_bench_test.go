package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// BenchmarkStartSchedules is a replica's start-up on a memory store that
// holds 100,000 schedules, each with params of its own, spread over the
// minute: from Run to the first run entered (reported as s/first-run), and
// from its cancel to its return (s/stop).
//
//	go test ./scheduler/internal/engine -run '^$' -bench StartSchedules -benchtime 3x
func BenchmarkStartSchedules(b *testing.B) {
	const n = 100000
	st := memstore.New(memstore.Options{})
	var ws []slotstore.ScheduleWrite
	for i := range n {
		id := fmt.Sprintf("t%06d", i)
		sched, err := schedule.Parse(fmt.Sprintf("%d * * * * *", i%60), "")
		if err != nil {
			b.Fatal(err)
		}
		j := JobSpec{Name: id, Run: "digest", Schedule: sched, Params: fmt.Appendf(nil, `{"tenant":%d}`, i),
			Lease: 15 * time.Second, Timeout: time.Minute, Deadline: time.Minute, History: time.Hour,
			OnCrash: policy.OnCrashRetry, Overlap: policy.OverlapAllow, CatchUp: policy.CatchUpNone}
		ws = append(ws, slotstore.ScheduleWrite{ID: id, Run: "digest", Spec: ScheduleSpec(j), IfVersion: slotstore.AnyVersion})
		if len(ws) == slotstore.MaxScheduleWrites {
			if _, err := st.WriteSchedules(context.Background(), slotstore.WriteSchedulesParams{By: "bench", Writes: ws}); err != nil {
				b.Fatal(err)
			}
			ws = ws[:0]
		}
	}
	var total, stop time.Duration
	for b.Loop() {
		first := make(chan time.Time, 1)
		fn := func(context.Context, jobs.Run) error {
			select {
			case first <- time.Now():
			default:
			}
			return nil
		}
		e, err := New(Config{Replica: "a", Incarnation: "bench", Log: testLogger(), Now: time.Now, Grace: time.Second,
			Lookup: func(string) (jobs.Func, bool) { return fn, true }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- e.Run(ctx, RunParams{Store: st}) }()
		total += (<-first).Sub(start)
		stopped := time.Now()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		stop += time.Since(stopped)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/first-run")
	b.ReportMetric(stop.Seconds()/float64(b.N), "s/stop")
}
