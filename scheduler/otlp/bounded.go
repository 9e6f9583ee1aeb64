package otlp

import (
	"context"
	"errors"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errStopped is what an export gets once the flush's time is up.
var errStopped = errors.New("otlp: the scheduler has stopped; spans dropped")

// bounded is the exporter the provider's batch processor sends to: its
// abort ends the export under way and refuses the batches left, so that a
// collector that never answers cannot keep the processor, and the log,
// going after Run.
type bounded struct {
	sdktrace.SpanExporter
	aborted context.Context
	abort   context.CancelFunc
}

func newBounded(e sdktrace.SpanExporter) *bounded {
	ctx, cancel := context.WithCancel(context.Background())
	return &bounded{SpanExporter: e, aborted: ctx, abort: cancel}
}

// ExportSpans exports spans until the export ends or abort is called.
func (b *bounded) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if b.aborted.Err() != nil {
		return errStopped
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.aborted, cancel)()
	return b.SpanExporter.ExportSpans(ctx, spans)
}

// shutdown flushes and stops tp, whose processor exports to b, and returns
// once it has stopped: at ctx's end it aborts what is left to export. The
// provider's own Shutdown returns at its context's end while its
// processor goes on exporting, and retrying, for as long as the exporter
// lets it.
func (b *bounded) shutdown(ctx context.Context, tp *sdktrace.TracerProvider) error {
	errc := make(chan error, 1)
	go func() { errc <- tp.Shutdown(context.WithoutCancel(ctx)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		b.abort()
		<-errc
		return context.Cause(ctx)
	}
}
