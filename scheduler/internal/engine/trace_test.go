package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/runtrace"
	"github.com/slotcron/slotcron/scheduler/otlp"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A retry's run span links to the failed attempt's, in the slot's trace,
// with the IDs derived from (job, slot, attempt); the job's context
// carries its run's span.
func TestRetryLinksToFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(otlp.IDGenerator()))
		var mu sync.Mutex
		var jobSpans []trace.SpanContext
		j := job("flaky", func(ctx context.Context, run jobs.Run) error {
			mu.Lock()
			jobSpans = append(jobSpans, trace.SpanContextFromContext(ctx))
			mu.Unlock()
			if run.Attempt == 1 {
				return errors.New("first try fails")
			}
			return nil
		})
		j.Schedule = mustSchedule(t, "@every 1h")
		j.Retries = Retries{Max: 1, Backoff: time.Second}
		e := newEngine(t, j)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := e.Run(ctx, RunParams{Store: memstore.New(memstore.Options{}), Tracing: tp}); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		// The slot an hour after the store began to record the job, its
		// retry a second later.
		time.Sleep(time.Hour + 10*time.Second)
		stop()
		wg.Wait()

		var runs []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == spanRun {
				runs = append(runs, s)
			}
		}
		if len(runs) != 2 {
			t.Fatalf("%d run spans, want the failed attempt's and its retry's", len(runs))
		}
		slot := time.Date(2000, 1, 1, 1, 0, 0, 0, time.UTC)
		for i, s := range runs {
			tid, sid := runtrace.RunIDs("", "flaky", slot, i+1)
			if s.SpanContext().TraceID() != tid || s.SpanContext().SpanID() != sid {
				t.Errorf("attempt %d's span is %v, want the IDs derived from its slot", i+1, s.SpanContext())
			}
			if !jobSpans[i].Equal(s.SpanContext()) {
				t.Errorf("attempt %d's job saw span %v in its context, want its run's", i+1, jobSpans[i])
			}
		}
		if got := runs[0].Status(); got.Description != "first try fails" {
			t.Errorf("the failed attempt's status is %+v", got)
		}
		links := runs[1].Links()
		if len(links) != 1 || links[0].SpanContext.SpanID() != runs[0].SpanContext().SpanID() ||
			!hasAttr(links[0].Attributes, attribute.String("slotcron.link", "retry")) {
			t.Fatalf("the retry's links are %+v, want one to attempt 1, marked retry", links)
		}
	})
}

// Without a tracer provider no span is recorded and the job's context
// carries none.
func TestNoTracingByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen trace.SpanContext
		j := job("quiet", func(ctx context.Context, _ jobs.Run) error { seen = trace.SpanContextFromContext(ctx); return nil })
		j.Schedule = mustSchedule(t, "@every 1h")
		e := newEngine(t, j)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = e.Run(ctx, RunParams{Store: memstore.New(memstore.Options{})}) })
		time.Sleep(2 * time.Second)
		stop()
		wg.Wait()
		if seen.IsValid() {
			t.Errorf("the job's context carries span %v with no tracing", seen)
		}
	})
}

func hasAttr(kvs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range kvs {
		if kv == want {
			return true
		}
	}
	return false
}
