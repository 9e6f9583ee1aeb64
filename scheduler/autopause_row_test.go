package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// Tests of what the row of failures is when slots end out of order, when
// it is long, and when two failures end together.

// failSlowly registers as "fail" a job that fails with "boom", its k-th
// run after taking slow(k).
func (r *autoPauseRig) failSlowly(slow func(k int) time.Duration) {
	var mu sync.Mutex
	n := 0
	r.reg = jobs.NewRegistry()
	r.reg.Register("fail", func(ctx context.Context, run jobs.Run) error {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		time.Sleep(slow(k))
		return errors.New("boom")
	})
}

// Overlapping slots that end out of order (overlap: allow, every other run
// outlasting the next slot) still pause a job whose every slot fails: the
// row is the newest finished slots, not a count that can step past N.
func TestPauseAfterFailuresOutOfOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		r.conf = "defaults: {pause_after_failures: 2}\n" +
			"jobs: {fail: {schedule: '*/10 * * * * *', catch_up: none, lease: 2s, overlap: allow}}"
		r.failSlowly(func(k int) time.Duration { return time.Duration(k%2) * 15 * time.Second })
		stop := start(t, r.replica(t, "a"))
		defer stop()
		note := r.awaitPause(t)
		if note.By != "slotcron" || note.Reason != "2 failed slots in a row; last error: boom" {
			t.Errorf("pause note %+v, want by slotcron after 2 failed slots", note)
		}
		if l := r.pauseLines(t); len(l) != 1 {
			t.Errorf("%d \"job paused after failures\" lines, want 1: %v", len(l), l)
		}
	})
}

// countingHistory counts the reads of the history of the job "fail".
type countingHistory struct {
	slotstore.Store
	mu sync.Mutex
	n  int
}

func (c *countingHistory) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	c.mu.Lock()
	if p.Job == "fail" {
		c.n++
	}
	c.mu.Unlock()
	return c.Store.History(ctx, p)
}

// pause_after_failures set on a job that has failed 2,000 slots in a row
// pauses it at its next failure, and the decision reads the history no
// further than the row it needs (1,000 slots: ten pages of 100), not back
// to the job's last success.
func TestPauseAfterFailuresLongRowReadsOnlyTheRow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		r.conf = "jobs: {fail: {schedule: '* * * * * *', catch_up: none, lease: 2s, pause_after_failures: 0}}"
		stop := start(t, r.replica(t, "a"))
		for len(r.job.ran()) < 2000 {
			time.Sleep(time.Second)
		}
		stop()
		r.conf = "jobs: {fail: {schedule: '* * * * * *', catch_up: none, lease: 2s, pause_after_failures: 1000}}"
		cs := &countingHistory{Store: r.st}
		n0 := len(r.job.ran())
		stop = start(t, r.replica(t, "b", WithStore(cs)))
		defer stop()
		r.awaitPause(t)
		if n := len(r.job.ran()) - n0; n != 1 {
			t.Errorf("paused after %d more failures, want 1", n)
		}
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.n > 11 {
			t.Errorf("one decision read the history %d times, want at most 11 pages", cs.n)
		}
	})
}

// slowPauses answers a read of the pauses a little late.
type slowPauses struct{ slotstore.Store }

func (s slowPauses) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	ps, err := s.Store.Pauses(ctx)
	time.Sleep(20 * time.Millisecond) // the reply's way back
	return ps, err
}

// Two failed slots that end together pause the job once: one ERROR line,
// one count.
func TestPauseAfterFailuresEndingTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		r.conf = "jobs: {fail: {schedule: '*/10 * * * * *', catch_up: none, lease: 2s, overlap: allow, pause_after_failures: 1}}"
		r.failSlowly(func(k int) time.Duration {
			if k == 1 {
				return 10*time.Second - 20*time.Millisecond
			}
			return 0
		})
		stop := start(t, r.replica(t, "a", WithStore(slowPauses{r.st})))
		time.Sleep(15 * time.Second)
		stop()
		if l := r.pauseLines(t); len(l) != 1 {
			t.Errorf("%d \"job paused after failures\" lines, want 1: %v", len(l), l)
		}
	})
}

// pausedBySlotcron is replica reg's slotcron_job_paused_by_slotcron for
// the job "fail", and whether it has the series.
func pausedBySlotcron(t *testing.T, reg prometheus.Gatherer) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetName() == "slotcron_job_paused_by_slotcron" && len(m.GetLabel()) == 1 &&
				m.GetLabel()[0].GetName() == "job_name" && m.GetLabel()[0].GetValue() == "fail" {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// Every replica, not only the one that paused the job, exports
// slotcron_job_paused_by_slotcron 1 while the pause on failure lasts; a
// pause an operator set in its place has no series.
func TestPauseAfterFailuresGaugeOnEveryReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newAutoPauseRig()
		ma, mb := prometheus.NewRegistry(), prometheus.NewRegistry()
		stopA := start(t, r.replica(t, "a", WithRegistry(ma)))
		defer stopA()
		r.awaitPause(t)
		stopB := start(t, r.replica(t, "b", WithRegistry(mb)))
		defer stopB()
		time.Sleep(10 * time.Second) // two beats: both replicas read the pauses
		for name, reg := range map[string]prometheus.Gatherer{"a": ma, "b": mb} {
			if v, ok := pausedBySlotcron(t, reg); !ok || v != 1 {
				t.Errorf("replica %s: slotcron_job_paused_by_slotcron %v (series %v), want 1", name, v, ok)
			}
		}
		r.resume(t)
		if err := r.st.SetPause(context.Background(), slotstore.PauseParams{Job: "fail", Paused: true, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		for name, reg := range map[string]prometheus.Gatherer{"a": ma, "b": mb} {
			if v, ok := pausedBySlotcron(t, reg); ok {
				t.Errorf("replica %s: paused by alice, slotcron_job_paused_by_slotcron %v, want no series", name, v)
			}
		}
	})
}
