// A loss of the store's data, as a job's after_data_loss meets it: the
// claims of a job declared run are exempt from the generation rules
// (slotstore.ClaimRequest.RunsAfterDataLoss), and a run of this replica
// whose marker went with the data is run again or recorded skipped.

package engine

import (
	"time"

	"github.com/slotcron/slotcron/policy"
)

// afterDataLoss is p's after_data_loss.
func (p *plan) afterDataLoss() policy.AfterDataLoss {
	if p.afterLoss {
		return policy.AfterDataLossRun
	}
	return policy.AfterDataLossSkip
}

// lostHere reports whether e is the watch of a slot whose run this process
// ended with its lease lost, not long ago (runSet.lost), and whose marker
// the store must still keep: the slot is younger than its history by more
// than the clocks' margin, so no store could have expired or pruned
// its marker, whoever finished it. Its absence then means the store lost
// it.
func (l *loop) lostHere(e *entry) bool {
	if e.kind != watch || e.anew || !l.s.now().Add(clockMargin).Before(e.slot.Add(e.p.history)) {
		return false
	}
	l.runs.mu.Lock()
	defer l.runs.mu.Unlock()
	lr, ok := l.runs.lost[slotKey{e.p.name, e.slot.Unix()}]
	return ok && time.Now().Before(lr.until)
}

// markerLost acts on a slot whose run this replica held when the store
// lost its marker, and with it any record that the slot ran: a job declared
// after_data_loss: run claims it anew at once (attempt 1, a new fence; its
// effect's record refuses the repeat), as a takeover would, whatever its
// window; another's is recorded skipped for data loss, so the slot does
// not end with no record at all.
func (l *loop) markerLost(e *entry) {
	l.s.log.Warn("a running slot's marker was lost with the store's data", "job", e.p.name,
		"slot", e.slot.Format(time.RFC3339), "after_data_loss", e.p.afterDataLoss())
	if e.p.afterLoss {
		l.push(&entry{p: e.p, slot: e.slot, kind: watch, anew: true}, l.s.now())
		return
	}
	// Recorded once its window closes, if no claim made a marker before.
	l.h.push(&entry{at: l.s.now(), p: e.p, slot: e.slot, kind: lapse, reason: reasonRunLost})
}
