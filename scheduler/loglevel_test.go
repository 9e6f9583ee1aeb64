package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
)

// A run that failed is logged at WARN while a retry is due, and at ERROR
// when its slot is final — its retries spent, or none configured (the
// default): an operator filtering on WARN sees every failure, and a
// pipeline alerting on ERROR every failed slot.
func TestFailedRunsLogAtWarnAndError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf testlog.Buffer
		reg := jobs.NewRegistry()
		fail := func(context.Context, jobs.Run) error { return errors.New("boom") }
		reg.Register("plain", fail)
		reg.Register("retried", fail)
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		conf := `jobs:
  plain: {schedule: "@every 1h"}
  retried: {schedule: "@every 1h", retries: {max: 1, backoff: 1s}}`
		stop := start(t, replica(t, steadyStore(), "a", conf, reg, WithLogger(logger)))
		time.Sleep(10 * time.Second) // the slot at the start of the hour, and its retry
		stop()
		got := map[string][]string{} // job: level msg, in order
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var l struct{ Level, Msg, Job string }
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(l.Msg, "run finished") || strings.HasPrefix(l.Msg, "run failed") {
				got[l.Job] = append(got[l.Job], l.Level+" "+l.Msg)
			}
		}
		if want := []string{"ERROR run finished"}; !slices.Equal(got["plain"], want) {
			t.Errorf("plain: %q, want %q", got["plain"], want)
		}
		if want := []string{"WARN run failed; retry scheduled", "ERROR run finished"}; !slices.Equal(got["retried"], want) {
			t.Errorf("retried: %q, want %q", got["retried"], want)
		}
	})
}
