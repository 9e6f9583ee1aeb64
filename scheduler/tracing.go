package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/scheduler/internal/runtrace"
)

// TracingConfig exports OpenTelemetry spans of every run: the run, its
// claim, each lease renewal and the recording of its outcome, with the
// job, slot, fence, attempt and replica as attributes; a takeover or retry
// links to the attempt before it. The job's context carries the run's
// span, so spans the job starts nest under it. Off by default: the zero
// value traces nothing.
//
// The YAML block is served by package scheduler/otlp, which links the
// OpenTelemetry SDK and its OTLP/HTTP exporter: a binary whose
// configuration has a tracing block imports it,
//
//	import _ "github.com/slotcron/slotcron/scheduler/otlp"
//
// and one that does not is refused at tracing, naming that import. In Go,
// WithTracerProvider hands the scheduler a provider of your own instead.
type TracingConfig struct {
	// OTLP is where spans are exported to.
	OTLP OTLPConfig `yaml:"otlp"`
	// SampleRatio is the share of slots traced, from 0 to 1; every attempt
	// of a slot is traced or none is, on every replica alike. Nil means 1:
	// every slot.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// Cluster names the cluster in the trace and span IDs of its runs,
	// which are derived from it, the job, the slot and the attempt: give
	// every replica of a cluster the same name and each cluster that
	// exports to the same tracing backend (staging and production, say)
	// its own, or their runs of the same job and slot share IDs. Read with
	// WithTracerProvider too. Default: none, the same in every cluster.
	Cluster string `yaml:"cluster"`
}

// OTLPConfig says where OTLP/HTTP export requests go.
type OTLPConfig struct {
	// Endpoint is the collector's host:port (requests go to /v1/traces on
	// it), or a URL, http or https, whose path is the traces path (none
	// means /v1/traces), with no user, query or fragment: credentials go
	// in Headers. Required in a tracing block.
	Endpoint string `yaml:"endpoint"`
	// Insecure sends plain HTTP to a host:port endpoint; without it, HTTPS.
	// A URL says which itself.
	Insecure bool `yaml:"insecure"`
	// Headers are sent with every export request, such as an
	// authorization header. Default: none.
	Headers map[string]string `yaml:"headers"`
}

// WithTracerProvider traces runs through tp instead of the configuration's
// tracing block, which is then not read. The caller keeps ownership and
// shuts tp down after Run. A takeover's link to the attempt before names
// IDs derived from the slot: build an SDK provider with
// sdktrace.WithIDGenerator(otlp.IDGenerator()) so that they are the IDs
// its spans get.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(sc *Scheduler) { sc.tracing = tp }
}

// on reports whether the configuration has a tracing block.
func (t TracingConfig) on() bool {
	return t.OTLP.Endpoint != "" || t.OTLP.Insecure || len(t.OTLP.Headers) > 0 || t.SampleRatio != nil
}

// checkTracing reports what in the tracing block is wrong, each at its key.
func (c *Config) checkTracing(add func(*ConfigError)) {
	t := c.Tracing
	if !t.on() {
		return
	}
	if _, ok := runtrace.Linked(); !ok {
		add(c.errAt(fmt.Sprintf("tracing is not linked into this binary: import _ %q", runtrace.Import), "tracing"))
	}
	if r := t.SampleRatio; r != nil && !(*r >= 0 && *r <= 1) {
		add(c.errAt(fmt.Sprintf("sample_ratio %v must be from 0 to 1", *r), "tracing", "sample_ratio"))
	}
	ep := t.OTLP.Endpoint
	at := []string{"tracing", "otlp", "endpoint"}
	// The endpoint is never printed whole: it may hold a password.
	switch u, err := url.Parse(ep); {
	case ep == "":
		add(c.errAt("endpoint is required: the collector's host:port or URL", at...))
	case !strings.Contains(ep, "://"):
	case err != nil:
		add(c.errAt(fmt.Sprintf("endpoint is not a URL (%v): want host:port or an http or https URL", errors.Unwrap(err)), at...))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		add(c.errAt(fmt.Sprintf("endpoint %q: want host:port or an http or https URL", redacted(u)), at...))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		add(c.errAt(fmt.Sprintf("endpoint %q: a user, query or fragment is not sent; put credentials in headers", redacted(u)), at...))
	case t.OTLP.Insecure && u.Scheme == "https":
		add(c.errAt("insecure is set but the endpoint is an https URL", "tracing", "otlp", "insecure"))
	}
}

// redacted is u to print: without its password, query and fragment.
func redacted(u *url.URL) string {
	v := *u
	v.RawQuery, v.Fragment = "", ""
	return v.Redacted()
}

// openTracing builds the tracer provider of the configuration's tracing
// block and returns it with the function that flushes and stops it (once,
// however often it is called); nil when there is none or
// WithTracerProvider gave one.
func (s *Scheduler) openTracing(ctx context.Context) (trace.TracerProvider, func(), error) {
	t := s.cfg.Tracing
	if s.tracing != nil || !t.on() {
		return s.tracing, func() {}, nil
	}
	open, ok := runtrace.Linked()
	if !ok {
		return nil, nil, fmt.Errorf("scheduler: tracing is not linked into this binary: import _ %q", runtrace.Import)
	}
	ratio := 1.0
	if t.SampleRatio != nil {
		ratio = *t.SampleRatio
	}
	tp, shutdown, err := open(ctx, runtrace.Settings{Endpoint: t.OTLP.Endpoint, Insecure: t.OTLP.Insecure,
		Headers: t.OTLP.Headers, SampleRatio: ratio, Replica: s.replica, Log: s.log})
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler: start tracing: %w", err)
	}
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			s.log.Warn("tracing: flushing spans failed", "err", err)
		}
	})
	return tp, stop, nil
}
