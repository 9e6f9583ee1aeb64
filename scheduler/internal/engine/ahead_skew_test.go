package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/slotcron/slotcron/scheduler/otlp"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A run claimed ahead keeps its lease while it waits for its instant, which
// a clock running ahead of the store's, or a jitter, makes as long as the
// lease or longer: it runs once, under its first claim. (With the run's
// goroutine and keeper started at the instant, each slot ran twice: its
// trust had ended as it waited, and another replica, or this one's own
// watch, took it over.)
func TestClaimedAheadKeepsItsLeaseWhileItWaits(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lease, jitter time.Duration
		skews         []time.Duration
	}{
		{"shortest lease, fast clock", time.Second, 0, []time.Duration{900 * time.Millisecond}},
		{"shortest lease, fast clock, two replicas", time.Second, 0, []time.Duration{900 * time.Millisecond, 0}},
		{"jitter, fast clock, two replicas", 3 * time.Second, 5 * time.Second, []time.Duration{4 * time.Second, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runs, ms := runSkewed(t, tc.lease, tc.jitter, tc.skews...)
				per := map[time.Time]int{}
				for _, r := range runs {
					per[r.run.Slot]++
				}
				for slot, n := range per {
					if n > 1 {
						t.Errorf("slot %s run %d times", slot.Format(time.TimeOnly), n)
					}
				}
				if len(per) < 2 {
					t.Errorf("%d slots run, want 2 at least", len(per))
				}
				for _, m := range ms {
					if m.Attempt > 1 || (m.State != slotstore.StateDone && m.State != slotstore.StateRunning && m.State != slotstore.StateSkipped) {
						t.Errorf("marker %s: state %s attempt %d holder %s", m.Slot.Format(time.TimeOnly), m.State, m.Attempt, m.Holder)
					}
				}
			})
		})
	}
}

// runSkewed runs a job every 10 s with lease and jitter on one replica a
// skew, each running that far ahead of the store's clock, for 35 s, and
// returns their runs and the job's markers.
func runSkewed(t *testing.T, lease, jitter time.Duration, skews ...time.Duration) ([]started, []slotstore.Marker) {
	st := memstore.New(memstore.Options{})
	var recs []*recorder
	var stops []context.CancelFunc
	var dones []chan error
	for i, skew := range skews {
		rec := &recorder{}
		j := job("j", rec.fn)
		j.Schedule, j.Lease, j.Jitter = mustSchedule(t, "@every 10s"), lease, jitter
		name := fmt.Sprintf("r%d", i)
		e, err := New(Config{Replica: name, Incarnation: name, Log: testLogger(),
			Now: func() time.Time { return time.Now().Add(skew) }, Grace: time.Second, Jobs: []JobSpec{j}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx, RunParams{Store: st}) }()
		recs, stops, dones = append(recs, rec), append(stops, cancel), append(dones, done)
	}
	time.Sleep(35 * time.Second)
	for i := range stops {
		stops[i]()
		if err := <-dones[i]; err != nil {
			t.Fatal(err)
		}
	}
	var all []started
	for _, r := range recs {
		all = append(all, r.snapshot()...)
	}
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "j", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	return all, ms
}

// The claim span of a slot claimed ahead ends when the store answers, not
// when the run starts at the instant.
func TestClaimSpanOfAClaimMadeAheadEndsAtTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(otlp.IDGenerator()))
		r := &recorder{}
		j := job("j", r.fn)
		j.Schedule = mustSchedule(t, "@every 10s")
		e := newEngine(t, j)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = e.Run(ctx, RunParams{Store: memstore.New(memstore.Options{}), Tracing: tp}) })
		time.Sleep(15 * time.Second)
		stop()
		wg.Wait()
		claims := 0
		for _, s := range rec.Ended() {
			if s.Name() != spanClaim {
				continue
			}
			claims++
			if d := s.EndTime().Sub(s.StartTime()); d > 100*time.Millisecond {
				t.Errorf("claim span lasts %v", d)
			}
		}
		if claims == 0 {
			t.Error("no claim span")
		}
	})
}
