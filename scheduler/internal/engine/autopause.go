// Pause on failure: a job whose slots keep failing is paused on every
// replica once its pause_after_failures most recent finished slots all
// failed, by slotcron, with the count and the last error as the reason.
//
// The row lives in the store, not in any replica: it is read back from the
// job's history, newest slot first, so failures of slots run by different
// replicas count together, and a restart forgets nothing. A slot done
// failed or timed out counts; one that succeeded, or was skipped while the
// job was paused, ends the row; any other (running, retrying, skipped for
// another reason, abandoned, replaced, released) is passed over. The read
// stops at N failures, so it costs the same however long the job has
// failed. Only the holder of the job's newest finished slot decides, one
// decision at a time on a replica, and not while the job is paused
// already: of two failures ending together one pauses the job, logs it and
// counts it, and slots that end out of order (overlap: allow) cannot step
// past the count. A resume made before the job's next slot starts no fresh
// row: its next failure pauses it again; a success, or a slot skipped
// while the job stayed paused, does.

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

// pauseAfterFailure decides, after f's outcome was recorded, whether the
// job's pause_after_failures most recent finished slots, f's the newest,
// all failed, and if so pauses the job. Store errors are retried a few
// times, then logged: the job is not paused this time.
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
	f.p.deciding <- struct{}{}
	defer func() { <-f.p.deciding }()
	ctx, cancel := context.WithTimeout(context.Background(), maxStoreWait)
	defer cancel()
	failed, err := failedRow(ctx, f.st, f.p.name, f.slot, f.p.pauseAfter)
	s.metrics.storeCall(err)
	if err != nil || !failed {
		return err
	}
	ps, err := f.st.Pauses(ctx)
	s.metrics.storeCall(err)
	if err != nil {
		return fmt.Errorf("read pauses: %w", err)
	}
	if slices.Contains(ps.Jobs, f.p.name) {
		return nil // paused already: its note stays as it was set
	}
	n := f.p.pauseAfter
	reason := noteText(fmt.Sprintf("%d failed slots in a row; last error: %s", n, f.err))
	err = f.st.SetPause(ctx, slotstore.PauseParams{Job: f.p.name, Paused: true, By: autoPauseBy, Reason: reason})
	s.metrics.storeCall(err)
	RecordAction(ctx, f.st, s.log, s.actionsRetain, Slotcron, Act{Kind: "pause", Target: f.p.name, Reason: reason, Err: err})
	if l := s.live.cur.Load(); l != nil {
		l.pauses.changed() // this replica's next slot reads the pauses anew
	}
	if err != nil {
		return fmt.Errorf("pause the job: %w", err)
	}
	f.log.get().Error("job paused after failures", "failures", n, "last_error", f.err,
		"pause_after_failures", n)
	s.metrics.autoPause(f.p).Inc()
	return nil
}

// failedRow reports whether slot is job's newest finished slot and it and
// the n-1 finished slots before it all failed, by the store's history read
// newest first: a slot done failed or timed out counts; one that succeeded
// or was skipped while the job was paused is finished and ends the row;
// any other is passed over. It reads no further than the n-th failure.
func failedRow(ctx context.Context, st slotstore.Store, job string, slot time.Time, n int) (bool, error) {
	failed := 0
	limit := min(n+2, failurePage) // the row, and a slot or two running
	var before time.Time
	for {
		ms, err := st.History(ctx, slotstore.HistoryParams{Job: job, Before: before, Limit: limit})
		if err != nil {
			return false, fmt.Errorf("read the history of %s: %w", job, err)
		}
		for _, m := range ms {
			finished := m.State == slotstore.StateDone ||
				m.State == slotstore.StateSkipped && m.Reason == reasonPaused
			switch {
			case !finished:
				continue
			case failed == 0 && !m.Slot.Equal(slot):
				return false, nil // a newer slot finished: its holder decides
			case m.State != slotstore.StateDone || m.Outcome == slotstore.Succeeded:
				return false, nil
			}
			if failed++; failed == n {
				return true, nil
			}
		}
		if len(ms) < limit {
			return false, nil
		}
		before = ms[len(ms)-1].Slot // a slot has one marker
	}
}

// noteText makes s text a pause's note may hold (fitText).
func noteText(s string) string { return fitText(s, maxPauseNote) }

// fitText makes s text a store keeps in n bytes: UTF-8 without NUL bytes
// (an error may hold anything), cut at a rune's start, "…" marking the cut.
func fitText(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	const more = "…"
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}
