package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/jobs"
)

// A tracing block is checked at its keys; in a binary that does not link
// package scheduler/otlp (this test's), it is refused at tracing, naming
// the import to add. Without a tracing block nothing is said.
func TestTracingConfig(t *testing.T) {
	const job = "jobs:\n  hello: {schedule: '@hourly'}\n"
	unlinked := `tracing is not linked into this binary: import _ "github.com/slotcron/slotcron/scheduler/otlp"`
	for _, tc := range []struct {
		doc  string
		want map[string]string // key: message
	}{
		{"", nil},
		{"tracing: {}\n", nil},
		{"tracing: {otlp: {endpoint: 127.0.0.1:4318, insecure: true}}\n", map[string]string{"tracing": unlinked}},
		{"tracing: {sample_ratio: 0.5}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.otlp.endpoint": "endpoint is required",
		}},
		{"tracing: {otlp: {endpoint: 'ftp://collector'}, sample_ratio: 2}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.sample_ratio":  "sample_ratio 2 must be from 0 to 1",
			"tracing.otlp.endpoint": `endpoint "ftp://collector": want host:port or an http or https URL`,
		}},
		{"tracing: {otlp: {endpoint: 'ftp://user:S3CRET@collector:4318'}}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.otlp.endpoint": `endpoint "ftp://user:xxxxx@collector:4318": want host:port or an http or https URL`,
		}},
		{"tracing: {otlp: {endpoint: 'https://user:S3CRET@collector:43x18'}}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.otlp.endpoint": `endpoint is not a URL (invalid port ":43x18" after host)`,
		}},
		{"tracing: {otlp: {endpoint: 'https://user:S3CRET@collector:4318'}}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.otlp.endpoint": `endpoint "https://user:xxxxx@collector:4318": a user, query or fragment is not sent; put credentials in headers`,
		}},
		{"tracing: {otlp: {endpoint: 'https://collector:4318/v1/traces?token=S3CRET'}}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.otlp.endpoint": "a user, query or fragment is not sent",
		}},
		{"tracing: {otlp: {endpoint: 'https://collector', insecure: true}}\n", map[string]string{
			"tracing":               unlinked,
			"tracing.otlp.insecure": "insecure is set but the endpoint is an https URL",
		}},
	} {
		cfg, err := Parse("t.yaml", []byte(tc.doc+job))
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		reg := jobs.NewRegistry()
		reg.Register("hello", func(_ context.Context, _ jobs.Run) error { return nil })
		err = cfg.Validate(reg)
		var errs ConfigErrors
		if tc.want == nil {
			if err != nil {
				t.Errorf("%q: %v", tc.doc, err)
			}
			continue
		}
		if !errors.As(err, &errs) || len(errs) != len(tc.want) {
			t.Errorf("%q: %v, want %d errors", tc.doc, err, len(tc.want))
			continue
		}
		for _, e := range errs {
			if strings.Contains(e.Error(), "S3CRET") {
				t.Errorf("%q: the error prints the password: %v", tc.doc, e)
			}
			if msg, ok := tc.want[e.Key]; !ok || !strings.Contains(e.Msg, msg) || e.Line != 1 {
				t.Errorf("%q: %s:%d: %s: %s, want at line 1 %q", tc.doc, e.File, e.Line, e.Key, e.Msg, msg)
			}
		}
	}
}
