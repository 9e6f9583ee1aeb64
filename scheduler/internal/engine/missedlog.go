// The lines of slots recorded missed or skipped: one a slot, one for a
// job's burst, and one for the jobs beyond jobLines, so that a replica that
// froze past every window does not log a line for each of its jobs.

package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// burstLines is how many slots of one job and reason are logged a line
// each; more are logged as one summary line. jobLines is how many jobs'
// lines one answer of the store logs: the missed slots of the jobs beyond
// it are one line a reason (manyMissed), or a replica that froze past
// every window would log a line for each of its jobs.
const (
	burstLines = 3
	jobLines   = 20
)

// manyMissed sums, by reason, the missed slots of the jobs beyond
// jobLines.
type manyMissed struct {
	by      map[string]*missedSum
	reasons []string // in the order first seen
}

type missedSum struct {
	jobs, slots int
	first, last time.Time
}

func (m *manyMissed) add(reason string, slots []time.Time) {
	s := m.by[reason]
	if s == nil {
		if m.by == nil {
			m.by = map[string]*missedSum{}
		}
		s = &missedSum{first: slots[0], last: slots[0]}
		m.by[reason] = s
		m.reasons = append(m.reasons, reason)
	}
	s.jobs++
	s.slots += len(slots)
	for _, t := range slots {
		s.first, s.last = minTime(s.first, t), maxTime(s.last, t)
	}
}

func (m *manyMissed) log(log *slog.Logger) {
	for _, r := range m.reasons {
		s := m.by[r]
		log.Warn("slots of more jobs missed", "jobs", s.jobs, "count", s.slots, "first", s.first.Format(time.RFC3339),
			"last", s.last.Format(time.RFC3339), "reason", r)
	}
}

// logMissed logs the missed and paused slots this replica's skips
// recorded, and those due before the store began to record their job: one
// line per slot in the cluster (the replicas whose skip found the marker
// there say nothing, or log a paused slot at DEBUG), and one line for a
// burst of a job's slots missed for one reason, such as the
// slots of an outage.
func (l *loop) logMissed(recorded []slotstore.SkipRequest) {
	type burst struct {
		job, reason string
		slots       []time.Time
	}
	var order []*burst
	bursts := map[[2]string]*burst{}
	for _, q := range recorded {
		if q.Reason == reasonPaused || q.Reason == slotstore.ReasonOverlap {
			l.logSkipped(slog.LevelInfo, q, slotstore.Marker{Reason: q.Reason, Holder: l.s.replica})
			continue
		}
		if q.Reason == reasonOverloaded {
			continue // logged once per overload (admit.go)
		}
		reason, ok := strings.CutPrefix(q.Reason, "missed: ")
		if !ok && q.Reason != reasonNewJob {
			continue // catch-up records are logged where decided
		}
		if !ok {
			reason = q.Reason
		}
		k := [2]string{q.Job, reason}
		b := bursts[k]
		if b == nil {
			b = &burst{job: q.Job, reason: reason}
			bursts[k] = b
			order = append(order, b)
		}
		b.slots = append(b.slots, q.Slot)
	}
	now := l.s.now()
	var more manyMissed
	jobs := 0
	for _, b := range order {
		if b.reason == reasonNewJob {
			l.logNewJob(b.job, b.slots)
			continue
		}
		if jobs++; jobs > jobLines {
			more.add(b.reason, b.slots)
			continue
		}
		if len(b.slots) <= burstLines {
			for _, s := range b.slots {
				l.s.log.Warn("slot missed", "job", b.job, "slot", s.Format(time.RFC3339), "reason", b.reason,
					"late_by", now.Sub(s).Round(time.Millisecond))
			}
			continue
		}
		slices.SortFunc(b.slots, time.Time.Compare)
		l.s.log.Warn("slots missed", "job", b.job, "count", len(b.slots), "first", b.slots[0].Format(time.RFC3339),
			"last", b.slots[len(b.slots)-1].Format(time.RFC3339), "reason", b.reason)
	}
	more.log(l.s.log)
}

// logNewJob logs the slots of job due before the store began to record it,
// which were never the job's: the one its catch-up looked at, and those its
// jitter delayed past the start-up.
func (l *loop) logNewJob(job string, slots []time.Time) {
	if len(slots) <= burstLines {
		for _, s := range slots {
			l.s.log.Info("slot "+reasonNewJob, "job", job, "slot", s.Format(time.RFC3339))
		}
		return
	}
	slices.SortFunc(slots, time.Time.Compare)
	l.s.log.Info("slots "+reasonNewJob, "job", job, "count", len(slots), "first", slots[0].Format(time.RFC3339),
		"last", slots[len(slots)-1].Format(time.RFC3339))
}

// logSkipped logs the slot of q recorded skipped as m says, at level.
func (l *loop) logSkipped(level slog.Level, q slotstore.SkipRequest, m slotstore.Marker) {
	if l.s.log.Enabled(context.Background(), level) {
		l.s.log.Log(context.Background(), level, "slot skipped", "job", q.Job, "slot", q.Slot.Format(time.RFC3339),
			"reason", m.Reason, "by", m.Holder)
	}
}
