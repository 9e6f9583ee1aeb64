package chaos

import (
	"strings"
	"testing"
	"time"
)

// The report fails a session for exactly the guarantees it checks, and
// not for what the fenced and unfenced styles are known not to cover.
func TestReportFailures(t *testing.T) {
	clean := func() *Report {
		return &Report{Lease: 3 * time.Second, CheckLatency: true, Faults: map[string]int{FaultKill: 1},
			Duplicates: map[string]int{"once": 0, "fenced": 2, "unfenced": 5, "complete": 0},
			Lost:       []LostSlot{{Key: "tick@x", Excused: "the store was down"}},
			Takeovers:  []Takeover{{Latency: 2 * time.Second, Remaining: 1900 * time.Millisecond}}}
	}
	if fs := clean().Failures(); len(fs) != 0 {
		t.Fatalf("a clean report fails: %v", fs)
	}
	for name, tc := range map[string]struct {
		spoil func(*Report)
		want  string
	}{
		"once duplicate":     {func(r *Report) { r.Duplicates["once"] = 1 }, "duplicate once"},
		"complete duplicate": {func(r *Report) { r.Duplicates["complete"] = 1 }, "duplicate complete"},
		"lost":               {func(r *Report) { r.Lost = append(r.Lost, LostSlot{Key: "tick@y"}) }, "1 slots lost"},
		"slow takeover": {func(r *Report) {
			r.Takeovers = append(r.Takeovers, Takeover{Latency: 4 * time.Second, Remaining: 2 * time.Second})
		}, "takeover p99"},
		"early skip": {func(r *Report) { r.EarlySkips = []string{"tick@z"} }, "before they were due"},
		"early takeover": {func(r *Report) {
			r.Takeovers = append(r.Takeovers, Takeover{Latency: 300 * time.Millisecond, Remaining: 1800 * time.Millisecond})
		}, "before the holder's lease ended"},
		"no takeover": {func(r *Report) { r.Unmeasured = []string{"tick@k"} }, "no one took over"},
		"rerun":       {func(r *Report) { r.Reruns = []string{"tick@r"} }, "started again after they were done"},
		"fence order": {func(r *Report) { r.FenceOrder = []string{"tick@f"} }, "fences did not grow"},
		"late effect": {func(r *Report) { r.LateEffects = []string{"slow@l"} }, "after their successor started"},
		"odd":         {func(r *Report) { r.Odd = []string{"r1 exited"} }, "nothing explains"},
	} {
		r := clean()
		tc.spoil(r)
		fs := r.Failures()
		if len(fs) != 1 || !strings.Contains(fs[0], tc.want) {
			t.Errorf("%s: failures %q, want one with %q", name, fs, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for p, want := range map[int]time.Duration{0: 1, 50: 3, 99: 5, 100: 5} {
		if got := percentile(ds, p); got != want {
			t.Errorf("percentile(%d) = %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of none is not 0")
	}
}
