package admin

import (
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// MarkerView is a marker as the JSON API and the CLI's JSON history show it.
type MarkerView struct {
	Job        string  `json:"job"`
	Slot       string  `json:"slot"`
	Key        string  `json:"key"`
	State      string  `json:"state"`
	Outcome    string  `json:"outcome,omitempty"`
	Error      string  `json:"error,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Manual     bool    `json:"manual,omitempty"`
	Backfill   bool    `json:"backfill,omitempty"`
	Attempt    int     `json:"attempt"`
	Fence      int64   `json:"fence"`
	Holder     string  `json:"holder"`
	ClaimedAt  string  `json:"claimed_at"`
	FinishedAt string  `json:"finished_at,omitempty"`
	Duration   float64 `json:"duration_seconds,omitempty"`
}

// MarkerJSON returns m as the JSON API shows it.
func MarkerJSON(m slotstore.Marker) MarkerView {
	v := MarkerView{
		Job: m.Job, Slot: m.Slot.UTC().Format(time.RFC3339), Key: jobs.Run{Job: m.Job, Slot: m.Slot}.Key(),
		State: string(m.State), Outcome: string(m.Outcome), Error: m.Error, Attempt: m.Attempt, Fence: m.Fence,
		Holder: m.Holder, ClaimedAt: m.ClaimedAt.UTC().Format(time.RFC3339Nano), Duration: m.Duration.Seconds(),
		Reason: m.Reason, Manual: m.Manual, Backfill: m.Backfill,
	}
	if !m.FinishedAt.IsZero() {
		v.FinishedAt = m.FinishedAt.UTC().Format(time.RFC3339Nano)
	}
	return v
}
