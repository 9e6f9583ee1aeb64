// Pause on failure: a job whose slots keep failing is paused on every
// replica after pause_after_failures of them in a row, by slotcron, with the
// count and the last error as the reason.
//
// The count lives in the store, not in any replica: it is read back from
// the job's history, so failures of consecutive slots run by different
// replicas count together, and a restart forgets nothing. Only the holder
// of the failed slot that brings the count to a multiple of N decides, so
// one replica pauses the job, logs it and counts it. A resume resets the
// count: the job was paused at N failures, so after a resume it pauses
// again at 2N, that is after N more; and a slot skipped while the job was
// paused ends the row, as a success does.

package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// autoPauseBy is who a pause on failure says paused the job.
	autoPauseBy = "slotcron"
	// maxPauseNote is the most bytes a pause's reason may hold
	// (slotstore.PauseParams).
	maxPauseNote = 1000
	// autoPauseTries is how many times a store error is retried while
	// deciding a pause on failure.
	autoPauseTries = 3
	// failurePage is how many markers one read of a job's history takes
	// while counting its failures.
	failurePage = 100
)

// failedSlot is a slot whose run failed for good: its retries, if any, are
// spent, and its outcome is recorded.
type failedSlot struct {
	st   slotstore.Store
	p    *plan
	slot time.Time
	err  string // the run's error
	log  *runLogger
}

// pauseAfterFailure decides, after f's outcome was recorded, whether f
// brings its job's failed slots in a row to a multiple of the job's
// pause_after_failures, and if so pauses the job. Store errors are retried
// a few times, then logged: the job is not paused this time.
func (s *Engine) pauseAfterFailure(f failedSlot) {
	if f.p.pauseAfter <= 0 {
		return
	}
	var err error
	for tries := 1; tries <= autoPauseTries; tries++ {
		if err = s.tryAutoPause(f); err == nil {
			return
		}
		if tries < autoPauseTries {
			time.Sleep(backoff(tries))
		}
	}
	f.log.get().Warn("could not decide on pausing the job after failures", "err", err,
		"pause_after_failures", f.p.pauseAfter)
}

// tryAutoPause is one try of pauseAfterFailure.
func (s *Engine) tryAutoPause(f failedSlot) error {
	ctx, cancel := context.WithTimeout(context.Background(), maxStoreWait)
	defer cancel()
	n, err := failuresInARow(ctx, f.st, f.p.name, f.slot)
	s.metrics.storeCall(err)
	if err != nil {
		return err
	}
	if n == 0 || n%f.p.pauseAfter != 0 {
		return nil
	}
	ps, err := f.st.Pauses(ctx)
	s.metrics.storeCall(err)
	if err != nil {
		return fmt.Errorf("read pauses: %w", err)
	}
	if slices.Contains(ps.Jobs, f.p.name) {
		return nil // paused already: its note stays as it was set
	}
	reason := noteText(fmt.Sprintf("%d failed slots in a row; last error: %s", n, f.err))
	err = f.st.SetPause(ctx, slotstore.PauseParams{Job: f.p.name, Paused: true, By: autoPauseBy, Reason: reason})
	s.metrics.storeCall(err)
	if l := s.live.cur.Load(); l != nil {
		l.pauses.changed() // this replica's next slot reads the pauses anew
	}
	if err != nil {
		return fmt.Errorf("pause the job: %w", err)
	}
	f.log.get().Error("job paused after failures", "failures", n, "last_error", f.err,
		"pause_after_failures", f.p.pauseAfter)
	s.metrics.autoPause(f.p).Inc()
	return nil
}

// failuresInARow counts the failed slots of job in a row that end with
// slot, by the store's history: slots done failed or timed out count, back
// to the newest one before slot that succeeded or was skipped while the job
// was paused. Slots that did not run to an outcome (skipped for another
// reason, abandoned, replaced, released, running, retrying) neither count
// nor end the row.
func failuresInARow(ctx context.Context, st slotstore.Store, job string, slot time.Time) (int, error) {
	n := 0
	before := slot.Add(time.Second)
	for {
		ms, err := st.History(ctx, slotstore.HistoryParams{Job: job, Before: before, Limit: failurePage})
		if err != nil {
			return 0, fmt.Errorf("read the history of %s: %w", job, err)
		}
		for _, m := range ms {
			switch {
			case m.State == slotstore.StateDone && m.Outcome == slotstore.Succeeded,
				m.State == slotstore.StateSkipped && m.Reason == reasonPaused:
				return n, nil
			case m.State == slotstore.StateDone:
				n++
			}
		}
		if len(ms) < failurePage {
			return n, nil
		}
		before = ms[len(ms)-1].Slot // a slot has one marker
	}
}

// noteText makes s text a pause's note may hold: UTF-8 without NUL bytes
// (an error may hold anything), cut at a rune's start to the most a note
// may hold.
func noteText(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= maxPauseNote {
		return s
	}
	const more = "…"
	cut := maxPauseNote - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}
