package otlp_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// The tracing block's endpoint — host, path and scheme — wins over the
// OTEL_EXPORTER_OTLP_* variables that would set them; the variables the
// block has no key for, such as the certificate to trust, still apply.
func TestEndpointWinsOverEnvironment(t *testing.T) {
	rcv := newTLSReceiver(t)
	cert := filepath.Join(t.TempDir(), "ca.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.srv.Certificate().Raw})
	if err := os.WriteFile(cert, block, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", cert)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/elsewhere")
	u, err := url.Parse(rcv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 10)
	reg := jobs.NewRegistry()
	reg.Register("tick", func(context.Context, jobs.Run) error { ran <- struct{}{}; return nil })
	stop := start(t, fmt.Sprintf("tracing: {otlp: {endpoint: %s}}\njobs: {tick: {schedule: '@every 1s'}}\n", u.Host),
		"a", reg, memstore.New(memstore.Options{}))
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
	}
	stop() // flushes the run's spans
	if len(rcv.named("slotcron.run")) == 0 {
		t.Errorf("no run span reached https://%s/v1/traces", u.Host)
	}
}
