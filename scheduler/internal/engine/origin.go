// Run origins: what started a run — its schedule, a manual trigger or a
// backfill — so that its lines say so.

package engine

import (
	"log/slog"

	"github.com/slotcron/slotcron/slotstore"
)

// origin is what started a run.
type origin uint8

const (
	// scheduled: a slot of the job's schedule, claimed by the loop.
	scheduled origin = iota
	// triggered: a manual trigger's slot (slotstore.Marker.Manual).
	triggered
	// backfilled: a slot a backfill claimed after it never ran
	// (slotstore.Marker.Backfill).
	backfilled
)

// originOf is the origin of the run of a slot whose marker is m: the loop
// takes over and adopts manual and backfilled slots too.
func originOf(m slotstore.Marker) origin {
	switch {
	case m.Manual:
		return triggered
	case m.Backfill:
		return backfilled
	}
	return scheduled
}

// attrs returns attrs with the attribute that marks a run's `run started`
// line: none for a scheduled run, manual=true or backfill=true for the
// others.
func (o origin) attrs(attrs ...slog.Attr) []slog.Attr {
	switch o {
	case triggered:
		return append(attrs, slog.Bool("manual", true))
	case backfilled:
		return append(attrs, slog.Bool("backfill", true))
	}
	return attrs
}
