package engine

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// gateHandler holds the goroutine that logs "backfill ran a slot" until
// gate is closed, and notes whether "backfill done" was logged.
type gateHandler struct {
	slog.Handler
	gate chan struct{}
	held chan struct{}
	done *atomic.Bool
}

func (h gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h gateHandler) WithGroup(string) slog.Handler            { return h }
func (h gateHandler) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "backfill ran a slot"):
		select {
		case h.held <- struct{}{}:
		default:
		}
		<-h.gate
	case r.Message == "backfill done":
		h.done.Store(true)
	}
	return nil
}

// Run does not return while the goroutine StartBackfill started still runs:
// it is one of Run's runs.
func TestStartBackfillEndsWithRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := schedule.Parse("@every 10s", "UTC")
		if err != nil {
			t.Fatal(err)
		}
		j := job("j", func(ctx context.Context, _ jobs.Run) error { return nil })
		j.Schedule, j.Deadline = sched, 5*time.Second
		var done atomic.Bool
		h := gateHandler{gate: make(chan struct{}), held: make(chan struct{}, 1), done: &done}
		e, err := New(Config{Replica: "a", Incarnation: "t", Log: slog.New(h), Now: time.Now, Grace: time.Second, Jobs: []JobSpec{j}})
		if err != nil {
			t.Fatal(err)
		}
		st := memstore.New(memstore.Options{})
		if _, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		time.Sleep(time.Minute) // no replica ran: slots with no marker
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		for _, ok := e.Records(); !ok; _, ok = e.Records() {
			time.Sleep(time.Millisecond)
		}
		plan, err := e.StartBackfill(context.Background(), "j", BackfillParams{From: t0, To: time.Now()})
		if err != nil || plan.ToRun() < 2 {
			t.Fatalf("plan %+v, %v", plan, err)
		}
		<-h.held // the first backfilled slot ran; its goroutine is logging
		stop()
		time.Sleep(100 * time.Millisecond) // well within the grace
		close(h.gate)
		<-ran
		returned := done.Load()
		synctest.Wait()
		if !returned && done.Load() {
			t.Error("Run returned while the backfill's goroutine still ran: it logged \"backfill done\" after")
		}
	})
}

// A backfill of older slots never moves the last-success gauge back.
func TestBackfillKeepsLastSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := schedule.Parse("@every 10s", "UTC")
		if err != nil {
			t.Fatal(err)
		}
		j := job("j", func(ctx context.Context, _ jobs.Run) error { return nil })
		j.Schedule, j.Deadline = sched, 5*time.Second
		reg := prometheus.NewRegistry()
		e, err := New(Config{Replica: "a", Incarnation: "t", Log: testLogger(), Now: time.Now, Grace: time.Second, Jobs: []JobSpec{j}, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		st := memstore.New(memstore.Options{})
		if _, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		time.Sleep(time.Minute)
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		defer func() { stop(); <-ran }()
		time.Sleep(35 * time.Second) // a few live slots succeed
		before := gaugeValue(e.metrics.lastSuccess.WithLabelValues("j"))
		if _, err := e.Backfill(context.Background(), "j", BackfillParams{From: t0, To: t0.Add(30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		after := gaugeValue(e.metrics.lastSuccess.WithLabelValues("j"))
		if after < before {
			t.Errorf("last_success went from %v back to %v after a backfill of older slots", time.Unix(int64(before), 0).UTC(), time.Unix(int64(after), 0).UTC())
		}
	})
}

func gaugeValue(g prometheus.Gauge) float64 {
	var d dto.Metric
	_ = g.Write(&d)
	return d.GetGauge().GetValue()
}

// A replica whose clock runs ahead by more than the starting deadline runs
// every slot (guarantee 7), and counts none of them missed: a slot is
// counted only by the replica whose skip recorded it.
func TestFastClockCountsNoMissedSlotThatRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := schedule.Parse("@every 10s", "UTC")
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		j := job("j", rec.fn)
		j.Schedule, j.Deadline = sched, 5*time.Second
		reg := prometheus.NewRegistry()
		fast := func() time.Time { return time.Now().Add(8 * time.Second) }
		e, err := New(Config{Replica: "a", Incarnation: "t", Log: testLogger(), Now: fast, Grace: time.Second, Jobs: []JobSpec{j}, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		st := memstore.New(memstore.Options{})
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(2 * time.Minute)
		stop()
		<-ran
		missed, skipped := missedAndSkipped(t, reg, st)
		t.Logf("runs %d, skipped markers %d, slots_missed_total %v", len(rec.snapshot()), skipped, missed)
		if n := len(rec.snapshot()); n < 11 { // 2 min of 10 s slots, less the first
			t.Errorf("%d runs in 2 minutes of slots every 10 s", n)
		}
		if missed > float64(skipped) {
			t.Errorf("slots_missed_total is %v, but only %d slot(s) were recorded skipped", missed, skipped)
		}
	})
}

// Replica b's clock is set back, then forward again, while replica a runs
// every slot: b counts as missed none of the slots a ran.
func TestClockStepCountsNoMissedSlotThatRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := schedule.Parse("@every 10s", "UTC")
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		st := memstore.New(memstore.Options{})
		var step atomic.Int64
		mk := func(name string, now func() time.Time) (*Engine, *prometheus.Registry) {
			j := job("j", rec.fn)
			j.Schedule, j.Deadline = sched, 5*time.Second
			reg := prometheus.NewRegistry()
			e, err := New(Config{Replica: name, Incarnation: name, Log: testLogger(), Now: now, Grace: time.Second, Jobs: []JobSpec{j}, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			return e, reg
		}
		a, _ := mk("a", time.Now)
		b, regB := mk("b", func() time.Time { return time.Now().Add(time.Duration(step.Load())) })
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 2)
		go func() { ran <- a.Run(ctx, RunParams{Store: st}) }()
		go func() { ran <- b.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(32 * time.Second)
		step.Store(int64(-40 * time.Second)) // b's clock set back 40 s: it re-fires nothing
		time.Sleep(time.Minute)
		step.Store(0) // and forward again: b finds its heap's slots late
		time.Sleep(time.Minute)
		stop()
		<-ran
		<-ran
		missed, skipped := missedAndSkipped(t, regB, st)
		t.Logf("runs %d, skipped markers %d, b's slots_missed_total %v", len(rec.snapshot()), skipped, missed)
		if n := len(rec.snapshot()); n < 14 { // 2.5 min of 10 s slots, less the first
			t.Errorf("%d runs in 2.5 minutes of slots every 10 s", n)
		}
		if missed > float64(skipped) {
			t.Errorf("b's slots_missed_total is %v, but only %d slot(s) were recorded skipped", missed, skipped)
		}
	})
}

// missedAndSkipped returns the sum of reg's slots_missed_total and how many
// of job j's markers in st are skipped.
func missedAndSkipped(t *testing.T, reg prometheus.Gatherer, st slotstore.Store) (float64, int) {
	t.Helper()
	var missed float64
	for k, v := range gather(t, reg) {
		if strings.HasPrefix(k, "slotcron_slots_missed_total,") {
			missed += v
		}
	}
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "j", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, m := range ms {
		if m.State == slotstore.StateSkipped {
			skipped++
		}
	}
	return missed, skipped
}
