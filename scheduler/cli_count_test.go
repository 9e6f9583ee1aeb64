package scheduler

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// next and history take -n from 1 to 10000, and refuse anything else the
// same way, as a usage error.
func TestCountBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"next", "--schedule", "@hourly", "-n", "0"}, "next: -n 0: want 1 to 10000"},
		{[]string{"next", "--schedule", "@hourly", "-n", "-1"}, "next: -n -1: want 1 to 10000"},
		{[]string{"next", "--schedule", "@hourly", "-n", "10001"}, "next: -n 10001: want 1 to 10000"},
		{[]string{"history", "-n", "0"}, "history: -n 0: want 1 to 10000"},
		{[]string{"history", "-n", "-5"}, "history: -n -5: want 1 to 10000"},
		{[]string{"history", "-n", "10001"}, "history: -n 10001: want 1 to 10000"},
	} {
		var out, errb bytes.Buffer
		args := append(tc.args, "--config", "../config.example.yaml")
		code := Command(context.Background(), args, &out, &errb, demoRegistry())
		if code != ExitUsage || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out.String(), errb.String(), tc.want)
		}
	}
}

// cancelWriter cancels its context at the first write: a Ctrl-C while
// next prints.
type cancelWriter struct {
	bytes.Buffer
	cancel context.CancelCauseFunc
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.cancel(errors.New("interrupt signal received"))
	return w.Buffer.Write(p)
}

// next stops at the first signal, however many slots it was asked for.
func TestNextStopsAtFirstSignal(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	out := &cancelWriter{cancel: cancel}
	var errb bytes.Buffer
	code := Command(ctx, []string{"next", "--schedule", "* * * * * *", "-n", "10000"}, out, &errb, demoRegistry())
	lines := strings.Count(out.String(), "\n")
	if code != ExitFailure || lines != 1 || !strings.Contains(errb.String(), "interrupted while printing slots") {
		t.Errorf("exit %d after %d lines, stderr %q; want exit 1 after the first line, saying it was interrupted", code, lines, errb.String())
	}
}
