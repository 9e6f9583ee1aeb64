// Package testlog holds what tests use to read back what they logged, or
// what a process they started wrote.
package testlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Buffer collects what loggers of many goroutines write. Its zero value is
// ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Records returns the records written so far by a slog.JSONHandler, one a
// line, decoded; a line that is not JSON fails t.
func (b *Buffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// Logged returns the records written so far with the message msg.
func (b *Buffer) Logged(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range b.Records(t) {
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
