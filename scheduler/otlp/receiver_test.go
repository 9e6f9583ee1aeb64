package otlp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP collector in the test's process: it decodes the
// protobuf export requests the exporter sends to /v1/traces and keeps
// every span with the service.instance.id of its resource.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []span
}

// span is one exported span and the replica that exported it.
type span struct {
	*tracepb.Span
	replica string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.export))
	t.Cleanup(r.srv.Close)
	return r
}

// newTLSReceiver is a receiver served over HTTPS, with a certificate of
// its own.
func newTLSReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.export))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) export(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf export request at /v1/traces", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		replica := attr(rs.GetResource().GetAttributes(), "service.instance.id").GetStringValue()
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, span{sp, replica})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// named returns the spans received with name, in the order received.
func (r *receiver) named(name string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr is the value of the attribute key, nil if there is none.
func attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}
