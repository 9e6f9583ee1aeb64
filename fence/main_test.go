package fence_test

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
)

// TestMain stops the package's shared PostgreSQL after the tests and then
// checks that no goroutine outlived its test.
func TestMain(m *testing.M) { testserver.RunWithSharedPostgres(m) }

var names atomic.Int64

// unique returns a name no other test of the process uses, so tests that
// share a server or the package's counter do not see each other.
func unique(base string) string { return fmt.Sprintf("%s-%d-%d", base, os.Getpid(), names.Add(1)) }

// rejected returns slotcron_fence_rejections_total{resource} as a registry
// gathers it.
func rejected(t testing.TB, resource string) float64 {
	t.Helper()
	return counter(t, "slotcron_fence_rejections_total", resource)
}

// repeated returns slotcron_fence_repeats_total{resource} as a registry
// gathers it.
func repeated(t testing.TB, resource string) float64 {
	t.Helper()
	return counter(t, "slotcron_fence_repeats_total", resource)
}

func counter(t testing.TB, name, resource string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := fence.Register(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "resource") == resource {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// wantStale fails t unless err is a StaleError for resource with the given
// fences.
func wantStale(t testing.TB, err error, resource string, token, highest int64) {
	t.Helper()
	var se *fence.StaleError
	if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("err = %v, want a *fence.StaleError", err)
	}
	if se.Resource != resource || se.Fence != token || se.Highest != highest {
		t.Fatalf("stale error %+v, want resource %q fence %d highest %d", *se, resource, token, highest)
	}
}

// wantApplied fails t unless err is an *AppliedError for resource and run
// key with the given fences, wrapping ErrApplied, and wrapping ErrStale
// exactly when applied is above token.
func wantApplied(t testing.TB, err error, resource, key string, token, applied int64) {
	t.Helper()
	var ae *fence.AppliedError
	if !errors.As(err, &ae) || !errors.Is(err, fence.ErrApplied) {
		t.Fatalf("err = %v, want a *fence.AppliedError", err)
	}
	if ae.Resource != resource || ae.Key != key || ae.Fence != token || ae.Applied != applied {
		t.Fatalf("applied error %+v, want resource %q run %s fence %d applied %d", *ae, resource, key, token, applied)
	}
	if stale := applied > token; errors.Is(err, fence.ErrStale) != stale {
		t.Fatalf("errors.Is(%v, ErrStale) = %v, want %v", err, !stale, stale)
	}
	if applied > token {
		wantStale(t, err, resource, token, applied)
	}
}

// runOf returns the run of job's slot at slot with fence token.
func runOf(job string, slot time.Time, token int64, attempt int) jobs.Run {
	return jobs.Run{Job: job, Slot: slot, Fence: token, Attempt: attempt, Replica: fmt.Sprintf("r%d", attempt)}
}
