// The reasons this replica records slots skipped with, and the reason
// label slots_missed_total counts each under.

package engine

import (
	"strings"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// reasonPaused is the reason of a slot skipped while its job is paused.
	reasonPaused = "paused"
	// reasonLate and reasonUnavailable are the reasons of a slot whose
	// window closed, by this replica's clock, before it was claimed: the
	// replica woke too late, or the store did not answer its claims.
	reasonLate        = "missed: late"
	reasonUnavailable = "missed: store unavailable"
	// reasonDown is the reason of a slot that came due while no replica
	// ran its job.
	reasonDown = "missed: no replica claimed it in time"
	// catchUpPrefix begins the reason of a slot the job's catch-up policy
	// left: "catch_up none", "catch_up latest"...
	catchUpPrefix = "catch_up "
	// reasonNewJob is the reason of a slot due before the store began to
	// record its job, at this replica's start-up: the slot was never the
	// job's, and no claim can win it (slotstore.Generation).
	reasonNewJob = "not caught up: the store has just begun to record the job"
)

// missedReason is the reason label slots_missed_total counts a slot this
// replica recorded skipped with reason under, or "" for a reason it does
// not count here (data loss, and overlap forbid, are counted where a claim
// records them; an overlap skip recorded here is a queued slot that the
// job's next slot replaced).
func missedReason(reason string) string {
	switch {
	case reason == slotstore.ReasonOverlap:
		return slotstore.ReasonOverlap
	case reason == reasonPaused:
		return "paused"
	case reason == reasonLate:
		return "late"
	case reason == reasonUnavailable:
		return "store unavailable"
	case reason == reasonDown:
		return "down"
	case reason == reasonOverloaded:
		return "overloaded"
	case strings.HasPrefix(reason, catchUpPrefix):
		return "catch up"
	}
	return ""
}
