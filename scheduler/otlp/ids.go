package otlp

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/scheduler/internal/runtrace"
)

// IDGenerator returns the ID generator of the providers this package
// builds. It gives a run's span the IDs derived from its cluster, job,
// slot and attempt — the trace ID without the attempt, so that every
// attempt of a slot is one trace — and every other span random IDs. A takeover, on a
// replica that never saw the attempt before it, links to that attempt's
// span by deriving its IDs; give a provider of your own this generator
// (sdktrace.WithIDGenerator) when you hand it to the scheduler with
// WithTracerProvider, so that those links find their spans.
func IDGenerator() sdktrace.IDGenerator { return idGenerator{} }

type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if tid, sid, ok := runtrace.IDs(ctx); ok {
		return tid, sid
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, newSpanID()
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
