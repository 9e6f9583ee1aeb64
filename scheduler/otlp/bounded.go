package otlp

import (
	"context"
	"errors"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errStopped is what an export started after the provider stopped gets.
var errStopped = errors.New("otlp: the scheduler has stopped; spans dropped")

// bounded is the exporter the provider's batch processor sends to: it
// lets stop end every export still under way, so that a collector that
// never answers cannot keep the processor, and the log, going after Run.
// The processor keeps exporting after its Shutdown's deadline has passed;
// bounded's stop cancels that export and refuses the batches left, then
// waits until the processor has stopped (it calls Shutdown last).
type bounded struct {
	sdktrace.SpanExporter
	abort  context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func newBounded(e sdktrace.SpanExporter) *bounded {
	ctx, cancel := context.WithCancel(context.Background())
	return &bounded{SpanExporter: e, abort: ctx, cancel: cancel, done: make(chan struct{})}
}

// ExportSpans exports spans until the export ends or stop is called.
func (b *bounded) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if b.abort.Err() != nil {
		return errStopped
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.abort, cancel)()
	return b.SpanExporter.ExportSpans(ctx, spans)
}

// Shutdown stops the exporter; the batch processor calls it once its
// goroutine has ended.
func (b *bounded) Shutdown(ctx context.Context) error {
	defer b.once.Do(func() { close(b.done) })
	return b.SpanExporter.Shutdown(ctx)
}

// stop ends the export under way, if any, and returns once the batch
// processor has stopped. Call it after the provider's Shutdown, which
// starts the processor's stopping.
func (b *bounded) stop() {
	b.cancel()
	<-b.done
}
