package otlp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A run that is not sampled still hands the job a context carrying its
// span: the job's own spans, from a provider that follows the parent's
// decision, are not sampled either, rather than roots of traces of their
// own.
func TestUnsampledRunParentsJobSpans(t *testing.T) {
	rcv := newReceiver(t)
	app := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	defer func() { _ = app.Shutdown(context.Background()) }()
	type seen struct{ parent, sampled bool }
	done := make(chan seen, 10)
	reg := jobs.NewRegistry()
	reg.Register("tick", func(ctx context.Context, _ jobs.Run) error {
		_, sp := app.Tracer("app").Start(ctx, "job work")
		sp.End()
		done <- seen{trace.SpanContextFromContext(ctx).IsValid(), sp.SpanContext().IsSampled()}
		return nil
	})
	stop := start(t, fmt.Sprintf("tracing: {otlp: {endpoint: %s}, sample_ratio: 0}\njobs: {tick: {schedule: '@every 1s'}}\n",
		rcv.srv.URL), "a", reg, memstore.New(memstore.Options{}))
	defer stop()
	select {
	case got := <-done:
		if !got.parent || got.sampled {
			t.Errorf("the job's context carries a span: %v; the job's span is sampled: %v; want true, false", got.parent, got.sampled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
	}
}
