package runtrace

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// Import is the package whose import links the exporter of the tracing
// block of the configuration.
const Import = "github.com/slotcron/slotcron/scheduler/otlp"

// Settings are the tracing block of a configuration, as an exporter needs
// them.
type Settings struct {
	// Endpoint is host:port, or a URL whose path is the traces path.
	Endpoint string
	// Insecure sends plain HTTP to a host:port endpoint.
	Insecure bool
	// Headers are sent with every export request.
	Headers map[string]string
	// SampleRatio is the share of slots traced, from 0 to 1.
	SampleRatio float64
	// Replica is the replica's name, the service instance of its spans.
	Replica string
	// Log receives what the exporter has to say (failed exports).
	Log *slog.Logger
}

// Opener builds a tracer provider that exports as s says, and the function
// that flushes and stops it.
type Opener func(ctx context.Context, s Settings) (trace.TracerProvider, func(context.Context) error, error)

var (
	mu     sync.Mutex
	opener Opener
)

// Register makes o the exporter of the binary. It panics when one is
// registered already.
func Register(o Opener) {
	mu.Lock()
	defer mu.Unlock()
	if opener != nil {
		panic("slotcron: a tracing exporter is registered already")
	}
	opener = o
}

// Linked returns the exporter the binary links, if it links one.
func Linked() (Opener, bool) {
	mu.Lock()
	defer mu.Unlock()
	return opener, opener != nil
}
