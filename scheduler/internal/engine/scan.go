// The scanner: a goroutine that reads the store's running and retrying
// markers store-wide and hands them to the loop, which watches the slots of
// its jobs it does not run.

package engine

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// scanEvery is how often the store's running and retrying markers are
	// read, store-wide, to watch slots whose claim this replica never saw.
	scanEvery = time.Minute
	// scanLimit bounds the markers one scan reads in each state.
	scanLimit = 10000
)

// scanner reads the store's running and retrying markers, store-wide, at
// once and then every scanEvery, and hands them to the loop goroutine, so a
// slot whose holder died is taken over even if this replica never saw it
// claimed: it started after the claim, or the replicas that watched it
// restarted. Two reads per interval, whatever the number of jobs.
func (l *loop) scanner(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(scanEvery)
		var ms []slotstore.Marker
		for _, state := range []slotstore.State{slotstore.StateRunning, slotstore.StateRetrying} {
			found, err := l.scanState(ctx, state)
			if err != nil {
				if ctx.Err() == nil {
					l.s.log.Warn("reading running slots failed", "state", state, "err", err)
				}
				ms = nil
				break
			}
			ms = append(ms, found...)
		}
		if len(ms) == 0 {
			continue
		}
		select {
		case l.scans <- ms:
		case <-ctx.Done():
			return
		}
	}
}

// scanState reads every marker in state, store-wide, in pages of
// scanLimit, newest slot first: the oldest, whose holders are likeliest to
// be dead, are read too, however many there are.
func (l *loop) scanState(ctx context.Context, state slotstore.State) ([]slotstore.Marker, error) {
	var out []slotstore.Marker
	var before time.Time
	for {
		sctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
		page, err := l.st.History(sctx, slotstore.HistoryParams{State: state, Limit: scanLimit, Before: before})
		cancel()
		l.s.metrics.storeCall(err)
		if err != nil {
			return nil, err
		}
		if len(page) > 0 && !before.IsZero() && !page[0].Slot.Before(before) {
			// A store that does not page (a Store of the caller's own
			// that ignores Before): what it gave is what there is.
			return out, nil
		}
		out = append(out, page...)
		if len(page) < scanLimit {
			return out, nil
		}
		oldest := page[len(page)-1].Slot
		if oldest.Equal(page[0].Slot) {
			// A whole page of one second: the rest of that second is
			// passed over this time (another replica's scan, or the next,
			// may read it in another order).
			l.s.log.Warn("more slots of one second in a state than a scan reads", "state", state,
				"slot", oldest.UTC().Format(time.RFC3339), "read", scanLimit)
			before = oldest
			continue
		}
		// The next page begins at the oldest slot again: some of its
		// markers may lie beyond this page. Those read twice are watched
		// once.
		before = oldest.Add(time.Second)
	}
}

// watchAll watches every scanned marker of this replica's jobs that it does
// not run itself.
func (l *loop) watchAll(ms []slotstore.Marker) {
	now := l.s.now()
	for _, m := range ms {
		p := l.s.jobs().plan(m.Job)
		if p == nil {
			continue // another replica's job, or a duty's term
		}
		if _, ok := l.runs.running(slotKey{p.name, m.Slot.Unix()}); ok {
			continue
		}
		if m.State == slotstore.StateRetrying {
			// A retry is bound by its window; a stale one is left alone.
			if until := p.retryUntil(m.Slot); now.Before(until) {
				l.push(&entry{p: p, slot: m.Slot, kind: watch, until: until}, now)
			}
			continue
		}
		l.push(&entry{p: p, slot: m.Slot, kind: watch}, now)
	}
}
