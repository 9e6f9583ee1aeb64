// Package runtrace holds what the engine and the tracing package share
// without linking each other: the IDs a run's span is given, derived from
// its slot and attempt, and the registration of the exporter a binary
// links (package scheduler/otlp).
//
// Every attempt of a slot is one trace: its trace ID is derived from the
// cluster's name, the job and the slot alone, so all replicas sample a slot alike, and an
// operator finds every attempt of a run key in one place. Each attempt's
// run span is a root of that trace, with a span ID derived from (job,
// slot, attempt). A takeover happens on a replica that never saw the
// earlier attempt's span; it derives that span's IDs in the same way to
// link to it. Nothing is carried in the store.
package runtrace

import (
	"context"
	"crypto/sha256"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// RunIDs are the trace ID of every attempt of the slot of job and the span
// ID of the run span of its attempt, in cluster: the name every replica of
// one cluster shares, so that clusters exporting to one backend do not
// derive the same IDs for their runs of the same job and slot.
func RunIDs(cluster, job string, slot time.Time, attempt int) (trace.TraceID, trace.SpanID) {
	key := strconv.Itoa(len(cluster)) + ":" + cluster + "\x00" + job + "\x00" + strconv.FormatInt(slot.Unix(), 10)
	tsum := sha256.Sum256([]byte("slotcron trace\x00" + key))
	ssum := sha256.Sum256([]byte("slotcron span\x00" + key + "\x00" + strconv.Itoa(attempt)))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], tsum[:])
	copy(sid[:], ssum[:])
	// An all-zero ID is invalid; a hash has it once in 2^64 tries at best.
	if !tid.IsValid() {
		tid[0] = 1
	}
	if !sid.IsValid() {
		sid[0] = 1
	}
	return tid, sid
}

// idsKey is the context key of the IDs a root span started with the
// context should be given.
type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// WithIDs returns ctx asking an ID generator that honours it (package
// scheduler/otlp's) to give the next root span started with it these IDs.
// Pass the result to Start only, never on: every root span started with it
// would get the same IDs.
func WithIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, ids{tid, sid})
}

// IDs returns the IDs WithIDs put in ctx, if any.
func IDs(ctx context.Context) (trace.TraceID, trace.SpanID, bool) {
	v, ok := ctx.Value(idsKey{}).(ids)
	return v.trace, v.span, ok
}
