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
	// replica woke too late, or the store did not answer its claims. The
	// store records reasonLate itself for a claim that comes after the
	// window by its own clock (ClaimRequest.NotAfter).
	reasonLate        = slotstore.ReasonLate
	reasonUnavailable = "missed: store unavailable"
	// reasonDown is the reason of a slot that came due while no replica
	// ran its job.
	reasonDown = "missed: no replica claimed it in time"
	// catchUpPrefix begins the reason of a slot the job's catch-up policy
	// left: "catch_up none", "catch_up latest"...
	catchUpPrefix = "catch_up "
	// reasonRunLost is the reason of a slot whose marker the store lost
	// with its data while this replica ran it, for a job that does not
	// run such a slot again (loss.go).
	reasonRunLost = "data loss: the marker of its run was lost with the store's data"
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
	case reason == reasonRunLost:
		return "data loss" // a claim's skip for data loss counts where the claim records it (skipped)
	case strings.HasPrefix(reason, catchUpPrefix):
		return "catch up"
	}
	return ""
}
