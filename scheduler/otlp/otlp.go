// Package otlp links tracing into a binary: the tracing block of the
// configuration exports OpenTelemetry spans of every run over OTLP/HTTP
// (protobuf), through the OpenTelemetry SDK. Import it for its side
// effect:
//
//	import _ "github.com/slotcron/slotcron/scheduler/otlp"
//
// A configuration with a tracing block in a binary without it is refused
// at tracing, naming this import. It links the SDK, the OTLP exporter and,
// through the OTLP protocol's generated code, google.golang.org/grpc
// (though it sends nothing over gRPC); package scheduler alone links only
// the OpenTelemetry API and traces nothing.
//
// The provider it builds samples by trace ID (sample_ratio), names the
// replica as service.instance.id, takes service.name and other resource
// attributes from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, and
// gives each run span the IDs derived from its slot and attempt (see
// IDGenerator). What OpenTelemetry reports of failed exports goes to the
// scheduler's log, as a warning, until the provider stops. The scheduler
// flushes and stops the provider before Run returns; an export still under
// way when the flush's time is up is abandoned (see bounded).
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/scheduler/internal/runtrace"
)

func init() { runtrace.Register(open) }

// open builds the tracer provider the settings describe.
func open(ctx context.Context, s runtrace.Settings) (trace.TracerProvider, func(context.Context) error, error) {
	opts, err := exporterOptions(s)
	if err != nil {
		return nil, nil, err
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("otlp: build the exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(attribute.String("service.instance.id", s.Replica)))
	if err != nil {
		return nil, nil, fmt.Errorf("otlp: build the resource: %w", err)
	}
	// OpenTelemetry has one error handler per process; the last Run that
	// traces sets it. Its default writes raw lines to stderr. A stopped
	// scheduler's log hears nothing more.
	var stopped atomic.Bool
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if !stopped.Load() {
			s.Log.Warn("tracing: exporting spans failed", "err", err)
		}
	}))
	be := newBounded(exp)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(be),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(s.SampleRatio))),
		sdktrace.WithIDGenerator(IDGenerator()),
	)
	shutdown := func(ctx context.Context) error {
		err := be.shutdown(ctx, tp)
		stopped.Store(true)
		return err
	}
	return tp, shutdown, nil
}

// exporterOptions are the exporter's options for s: a host:port endpoint,
// plain when Insecure, or a URL, /v1/traces when its path is empty. The
// endpoint is always given as a URL, so that its host, path and scheme win
// over the OTEL_EXPORTER_OTLP_* environment variables that set them, as
// Headers, when there are any, win over the environment's.
func exporterOptions(s runtrace.Settings) ([]otlptracehttp.Option, error) {
	ep := s.Endpoint
	if !strings.Contains(ep, "://") {
		scheme := "https"
		if s.Insecure {
			scheme = "http"
		}
		ep = scheme + "://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return nil, fmt.Errorf("otlp: read the endpoint: %w", errors.Unwrap(err))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}
	if len(s.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(s.Headers))
	}
	return opts, nil
}
