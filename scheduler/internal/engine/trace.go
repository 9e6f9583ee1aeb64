// Run tracing: the spans of one run — the run itself, its claim, each
// lease renewal and the recording of its outcome — through the tracer
// provider Run was given (none by default: no span is built). The job's
// context carries the run span, so the job's own spans nest under it.
// Package runtrace says how a takeover or retry is linked to the attempt
// before it.

package engine

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/scheduler/internal/runtrace"
	"github.com/slotcron/slotcron/slotstore"
)

// tracerName names slotcron's instrumentation scope.
const tracerName = "github.com/slotcron/slotcron/scheduler"

// Span names and attribute keys of a run's spans.
const (
	spanRun    = "slotcron.run"
	spanClaim  = "slotcron.claim"
	spanRenew  = "slotcron.renew"
	spanFinish = "slotcron.finish"
)

// tracer starts the spans of runs in a cluster.
type tracer struct {
	trace.Tracer
	cluster string
}

// setTracing makes the engine trace runs through tp, their IDs derived in
// cluster; nil traces none, at no cost to a run.
func (s *Engine) setTracing(tp trace.TracerProvider, cluster string) {
	if tp == nil {
		s.tracer.Store(nil)
		return
	}
	s.tracer.Store(&tracer{tp.Tracer(tracerName), cluster})
}

// runSpan is one run's span; its zero value, a run not traced, does
// nothing.
type runSpan struct {
	tr   trace.Tracer
	span trace.Span
}

// traceRun starts the span of the run of claim c, sent to the store at
// sent, and returns ctx carrying it for the job. The span starts when the
// claim was sent, with a child span for the claim; an attempt after the
// first links to the attempt before.
func (s *Engine) traceRun(ctx context.Context, p *plan, c slotstore.Claim, sent time.Time) (context.Context, runSpan) {
	tp := s.tracer.Load()
	if tp == nil {
		return ctx, runSpan{}
	}
	tr := tp.Tracer
	tid, sid := runtrace.RunIDs(tp.cluster, p.name, c.Slot, c.Attempt)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithTimestamp(sent), trace.WithSpanKind(trace.SpanKindInternal)}
	_, span := tr.Start(runtrace.WithIDs(ctx, tid, sid), spanRun, opts...)
	if !span.IsRecording() {
		// Not sampled: the job's context still carries the span, so that
		// the job's own spans follow the run's decision and are not
		// sampled as roots of traces of their own.
		return trace.ContextWithSpan(ctx, span), runSpan{}
	}
	span.SetAttributes(
		attribute.String("slotcron.job", p.name),
		attribute.String("slotcron.slot", c.Slot.UTC().Format(time.RFC3339)),
		attribute.String("slotcron.run_key", p.name+"@"+c.Slot.UTC().Format(time.RFC3339)),
		attribute.Int64("slotcron.fence", c.Fence),
		attribute.Int("slotcron.attempt", c.Attempt),
		attribute.String("slotcron.replica", s.replica),
	)
	if c.Takeover() {
		_, prev := runtrace.RunIDs(tp.cluster, p.name, c.Slot, c.Attempt-1)
		kind := "takeover"
		if c.Retry {
			kind = "retry"
		}
		span.SetAttributes(attribute.String("slotcron.prev_holder", c.PrevHolder))
		span.AddLink(trace.Link{
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: prev, Remote: true,
				TraceFlags: span.SpanContext().TraceFlags()}),
			Attributes: []attribute.KeyValue{attribute.String("slotcron.link", kind), attribute.Int("slotcron.attempt", c.Attempt-1)},
		})
	}
	// The job's context carries the span, not the IDs asked for it: a root
	// span of the job's own gets IDs of its own.
	ctx = trace.ContextWithSpan(ctx, span)
	_, claim := tr.Start(ctx, spanClaim, trace.WithTimestamp(sent))
	claim.SetAttributes(attribute.Bool("slotcron.takeover", c.Takeover() && !c.Retry), attribute.Bool("slotcron.retry", c.Retry))
	claim.End()
	return ctx, runSpan{tr: tr, span: span}
}

// child starts a child span of the run, ended by the function returned
// with the error the step came to.
func (r runSpan) child(name string) func(err error) {
	if r.span == nil {
		return func(error) {}
	}
	_, sp := r.tr.Start(trace.ContextWithSpan(context.Background(), r.span), name)
	return func(err error) {
		if err != nil {
			sp.SetStatus(codes.Error, err.Error())
		}
		sp.End()
	}
}

// renewing starts the span of a lease renewal.
func (r runSpan) renewing() func(err error) { return r.child(spanRenew) }

// finish records the run's outcome through record, in a span of its own,
// and returns what record did: whether the outcome was recorded.
func (r runSpan) finish(outcome slotstore.Outcome, record func() bool) bool {
	if r.span == nil {
		return record()
	}
	_, sp := r.tr.Start(trace.ContextWithSpan(context.Background(), r.span), spanFinish)
	sp.SetAttributes(attribute.String("slotcron.outcome", string(outcome)))
	ok := record()
	if !ok {
		sp.SetStatus(codes.Error, "lease lost: the outcome was not recorded")
	}
	sp.End()
	return ok
}

// end ends the run's span with how the run ended and the job's error.
func (r runSpan) end(end End, err error) {
	if r.span == nil {
		return
	}
	r.span.SetAttributes(attribute.String("slotcron.end", string(end)))
	if err != nil {
		r.span.RecordError(err)
	}
	switch end {
	case End(slotstore.Failed), End(slotstore.TimedOut), EndRetrying:
		r.span.SetStatus(codes.Error, errString(err))
	case EndLeaseLost:
		r.span.SetStatus(codes.Error, "lease lost; outcome not recorded")
	}
	r.span.End()
}
