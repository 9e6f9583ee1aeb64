package admin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// How much of a job's history its status reads.
const (
	// statusDepth is how many of the job's newest markers are read for its
	// last success, last failure and recent outcomes.
	statusDepth = 50
	// streakDepth bounds how far back a failure streak that fills the
	// first read is followed, looking for the success before it.
	streakDepth = 500
	// recentLen is how many recent slots the status lists.
	recentLen = 20
	// runningLimit bounds the running markers one request reads.
	runningLimit = 1000
)

// stallMargin is how long past its lease's end, by this replica's clock, a
// run is called stalled: the lease ends by the store's clock, which may
// differ from this replica's by some seconds. A third of the lease, at
// least 5 s.
func stallMargin(lease time.Duration) time.Duration { return max(5*time.Second, lease/3) }

// Health says at a glance how a job is doing, as its status dot shows it.
const (
	healthPaused  = "paused"  // the job or the cluster is paused
	healthStalled = "stalled" // a run's lease ran out (by stallMargin at least): its holder is gone, a takeover is due
	healthFailing = "failing" // its latest finished slot failed
	healthRunning = "running" // a run is in progress
	healthOK      = "ok"      // its latest finished slot succeeded
	healthIdle    = "idle"    // no finished slot among those read
)

// jobStatus is how a job has been doing, read from its newest markers.
type jobStatus struct {
	Health      string      `json:"health"`
	LastSuccess *MarkerView `json:"last_success,omitempty"`
	LastFailure *MarkerView `json:"last_failure,omitempty"`
	// ConsecutiveFailures counts the failed slots since the last success;
	// ConsecutiveMore says the streak goes back further than was read.
	ConsecutiveFailures int  `json:"consecutive_failures"`
	ConsecutiveMore     bool `json:"consecutive_failures_more,omitempty"`
	// Running lists the job's slots that run now, newest first.
	Running []runningView `json:"running"`
	// Recent lists the newest slots, oldest first, for a sparkline.
	Recent []recentView `json:"recent"`
	// Scanned is how many markers were read: a last success or failure
	// older than that is not known.
	Scanned int `json:"scanned"`
}

// runningView is a slot in state running.
type runningView struct {
	Slot      string `json:"slot"`
	Key       string `json:"key"`
	Holder    string `json:"holder"`
	Fence     int64  `json:"fence"`
	Attempt   int    `json:"attempt"`
	Manual    bool   `json:"manual,omitempty"`
	Backfill  bool   `json:"backfill,omitempty"`
	ClaimedAt string `json:"claimed_at"`
	// Elapsed is the time since the claim; LeaseLeft the time until its
	// lease ends, negative once it has ended. Both are approximate: the
	// claim and the lease's end are the store's times, measured here
	// against this replica's clock. Stalled says the lease ended more
	// than stallMargin ago: the holder is gone, a takeover is due.
	Elapsed   float64 `json:"elapsed_seconds"`
	LeaseLeft float64 `json:"lease_left_seconds"`
	Stalled   bool    `json:"stalled,omitempty"`
}

// recentView is one slot of a sparkline.
type recentView struct {
	Slot     string  `json:"slot"`
	State    string  `json:"state"`
	Outcome  string  `json:"outcome,omitempty"`
	Attempt  int     `json:"attempt"`
	Manual   bool    `json:"manual,omitempty"`
	Backfill bool    `json:"backfill,omitempty"`
	Duration float64 `json:"duration_seconds,omitempty"`
}

// runningJSON shows m, a running slot of a job whose lease is lease.
func runningJSON(m slotstore.Marker, lease time.Duration, now time.Time) runningView {
	left := m.LeaseEnd.Sub(now)
	return runningView{Slot: m.Slot.UTC().Format(time.RFC3339), Key: jobs.Run{Job: m.Job, Slot: m.Slot}.Key(), Holder: m.Holder,
		Fence: m.Fence, Attempt: m.Attempt, Manual: m.Manual, Backfill: m.Backfill, ClaimedAt: m.ClaimedAt.UTC().Format(time.RFC3339Nano),
		Elapsed: now.Sub(m.ClaimedAt).Seconds(), LeaseLeft: left.Seconds(), Stalled: left < -stallMargin(lease)}
}

// succeeded and failed sort finished slots for a status: a slot that is
// neither (running, skipped, released, replaced) counts for neither. A slot
// waiting for its retry failed its last attempt; an abandoned one's run
// never recorded an end.
func succeeded(m slotstore.Marker) bool {
	return m.State == slotstore.StateDone && m.Outcome == slotstore.Succeeded
}

func failed(m slotstore.Marker) bool {
	switch m.State {
	case slotstore.StateDone, slotstore.StateRetrying:
		return m.Outcome == slotstore.Failed || m.Outcome == slotstore.TimedOut
	case slotstore.StateAbandoned:
		return true
	}
	return false
}

// readStatus reads j's status: its statusDepth newest markers and, while
// a failure streak fills them, older ones up to streakDepth. running are
// its running markers.
func readStatus(ctx context.Context, st reader, j engine.JobSpec, running []slotstore.Marker, now time.Time) (jobStatus, error) {
	job := j.Name
	ms, err := st.History(ctx, slotstore.HistoryParams{Job: job, Limit: statusDepth})
	if err != nil {
		return jobStatus{}, fmt.Errorf("read the history of %s: %w", job, err)
	}
	s := summarize(ms, len(ms) == statusDepth)
	if s.ConsecutiveMore {
		// One more read, of the rest of streakDepth: a job failing for
		// long is the one whose streak an operator wants to know.
		n := streakDepth - len(ms)
		more, err := st.History(ctx, slotstore.HistoryParams{Job: job, Limit: n, Before: ms[len(ms)-1].Slot})
		if err != nil {
			return jobStatus{}, fmt.Errorf("read the history of %s: %w", job, err)
		}
		ms = append(ms, more...)
		s = summarize(ms, len(more) == n)
	}
	s.Running = make([]runningView, len(running))
	for i, m := range running {
		s.Running[i] = runningJSON(m, j.Lease, now)
	}
	s.Health = health(s)
	return s, nil
}

// summarize reads a status from ms, newest first; full says older
// markers may exist beyond ms.
func summarize(ms []slotstore.Marker, full bool) jobStatus {
	s := jobStatus{Scanned: len(ms), Recent: make([]recentView, 0, recentLen)}
	streak := true
	for _, m := range ms {
		switch {
		case succeeded(m):
			if s.LastSuccess == nil {
				v := MarkerJSON(m)
				s.LastSuccess = &v
			}
			streak = false
		case failed(m):
			if s.LastFailure == nil {
				v := MarkerJSON(m)
				s.LastFailure = &v
			}
			if streak {
				s.ConsecutiveFailures++
			}
		}
	}
	s.ConsecutiveMore = streak && full && s.ConsecutiveFailures > 0
	for _, m := range ms[:min(len(ms), recentLen)] {
		s.Recent = append(s.Recent, recentView{Slot: m.Slot.UTC().Format(time.RFC3339), State: string(m.State),
			Outcome: string(m.Outcome), Attempt: m.Attempt, Manual: m.Manual, Backfill: m.Backfill, Duration: m.Duration.Seconds()})
	}
	slices.Reverse(s.Recent)
	return s
}

// health sums up s; a pause is applied by the caller.
func health(s jobStatus) string {
	for _, r := range s.Running {
		if r.Stalled {
			return healthStalled
		}
	}
	switch {
	case s.ConsecutiveFailures > 0:
		return healthFailing
	case len(s.Running) > 0:
		return healthRunning
	case s.LastSuccess != nil:
		return healthOK
	}
	return healthIdle
}

// readRunning reads the markers in state running, of job or, with job
// empty, of every job, grouped by job; more says there may be more than
// runningLimit.
func readRunning(ctx context.Context, st reader, job string) (byJob map[string][]slotstore.Marker, all []slotstore.Marker, more bool, err error) {
	ms, err := st.History(ctx, slotstore.HistoryParams{Job: job, State: slotstore.StateRunning, Limit: runningLimit})
	if err != nil {
		return nil, nil, false, fmt.Errorf("read the running slots: %w", err)
	}
	byJob = make(map[string][]slotstore.Marker)
	for _, m := range ms {
		byJob[m.Job] = append(byJob[m.Job], m)
	}
	return byJob, ms, len(ms) == runningLimit, nil
}
