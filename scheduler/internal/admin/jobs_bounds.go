package admin

import (
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// jobBounds is what a job's view says of which of its schedule's slots are
// its to run: the DST rule, the calendars it skips, its active window and
// max_runs, where it ends and whether it has. Each is left out when unset,
// so a job without them reads as before.
type jobBounds struct {
	// DST is a fixed-time schedule's rule when it is not the default,
	// gap shift and repeat first.
	DST *DSTJSON `json:"dst,omitempty"`
	// Except are the calendars whose dates the job skips.
	Except []calendarView `json:"except,omitempty"`
	// ActiveFrom and ActiveUntil bound the job's slots, RFC 3339; with
	// max_runs, ActiveUntil is the earlier of the window's end and the
	// last slot counted.
	ActiveFrom  string `json:"active_from,omitempty"`
	ActiveUntil string `json:"active_until,omitempty"`
	MaxRuns     int    `json:"max_runs,omitempty"`
	// End is the job's last slot, when its slots are bounded.
	End string `json:"end,omitempty"`
	// Ended is true once a bounded job has no slot left.
	Ended bool `json:"ended,omitempty"`
	// NextSkip is the reason a calendar skips the next slot
	// ("calendar NAME"), when one does.
	NextSkip string `json:"next_skip,omitempty"`
}

// calendarView is a calendar a job skips: its name and how many dates it
// holds.
type calendarView struct {
	Name  string `json:"name"`
	Dates int    `json:"dates"`
}

// boundsOf describes j's bounds, next being its next slot (zero for none)
// and shown whether the view shows it (not while paused): one schedule
// step and no allocation beyond the fields, as the jobs view reads up to a
// page of 1000 jobs.
func boundsOf(j engine.JobSpec, next time.Time, shown bool) jobBounds {
	var b jobBounds
	sched := j.Schedule
	if d := sched.DST(); sched.Fixed() && d != (schedule.DST{}) && (d.Gap != schedule.GapShift || d.Repeat != schedule.RepeatFirst) {
		b.DST = &DSTJSON{Gap: string(d.Gap), Repeat: string(d.Repeat)}
	}
	for _, c := range j.Except {
		b.Except = append(b.Except, calendarView{Name: c.Name, Dates: len(c.Dates)})
	}
	from, until := sched.Bounds()
	b.ActiveFrom, b.ActiveUntil, b.MaxRuns = stamp(from), stamp(until), j.MaxRuns
	if !until.IsZero() {
		b.End = stamp(sched.Prev(until))
		b.Ended = next.IsZero()
	}
	if shown && !next.IsZero() {
		b.NextSkip = engine.Excluded(j, next)
	}
	return b
}

// stamp is t in RFC 3339, UTC; "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
