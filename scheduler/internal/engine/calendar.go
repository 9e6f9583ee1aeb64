// Calendars a job skips, and the slots it runs at most: what a job's spec
// says beyond its schedule about which slots are its to run. Both are a
// pure function of the spec, so every replica skips the same slots and
// ends the job at the same one.

package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/slotstore"
)

// calendarPrefix begins the reason of a slot a calendar skips.
const calendarPrefix = "calendar "

// Calendar is a named set of dates that a job skips: a slot whose date in
// the job's time zone is one of them is recorded skipped with reason
// "calendar NAME" (CalendarReason), never claimed.
type Calendar struct {
	Name string `json:"name"`
	// Dates are YYYY-MM-DD, sorted, without repeats.
	Dates []string `json:"dates"`
}

// CalendarReason is the reason a slot skipped for calendar name is
// recorded with.
func CalendarReason(name string) string { return calendarPrefix + name }

// SkippedBy returns the reason slot is skipped for by the first of cals
// whose dates hold its date in loc, or "" when none does: the one rule by
// which the loop, the sweep, `next` and the jobs view tell a calendar's
// slots. Dates are sorted (Calendar), so each calendar costs a binary
// search.
func SkippedBy(cals []Calendar, loc *time.Location, slot time.Time) string {
	if len(cals) == 0 || loc == nil {
		return ""
	}
	day := slot.In(loc).Format(time.DateOnly)
	for _, c := range cals {
		if _, ok := slices.BinarySearch(c.Dates, day); ok {
			return CalendarReason(c.Name)
		}
	}
	return ""
}

// excluded returns the reason p's slot is skipped for by a calendar of
// its spec, or "".
func (p *plan) excluded(slot time.Time) string {
	if p.except == nil {
		return ""
	}
	return SkippedBy(p.except, p.sched.Location(), slot)
}

// Excluded returns the reason slot of j is skipped for by a calendar of
// its spec, or "": what `next` shows beside a slot.
func Excluded(j JobSpec, slot time.Time) string {
	return SkippedBy(j.Except, j.Schedule.Location(), slot)
}

// LastOfRuns returns the slot of sched that is the n-th, counted from
// from (included), that no calendar of cals skips: where a job with
// max_runs n ends. Zero when the schedule has fewer such slots in the 5
// years Next looks ahead from each.
func LastOfRuns(sched *schedule.Schedule, cals []Calendar, from time.Time, n int) time.Time {
	s := sched.Next(from.Add(-time.Second))
	for count := 0; !s.IsZero(); s = sched.Next(s) {
		if SkippedBy(cals, sched.Location(), s) == "" {
			if count++; count == n {
				return s
			}
		}
	}
	return time.Time{}
}

// calendarSkip is the request that records slot of p skipped for reason, a
// calendar's: at once, for the slot was never to run, but not before the
// slot by the store's clock.
func (p *plan) calendarSkip(slot time.Time, reason string) slotstore.SkipRequest {
	return slotstore.SkipRequest{Job: p.name, Slot: slot, Reason: reason, Retain: p.history, NotBefore: slot,
		Spec: p.spec.Fingerprint}
}

// noteEnded says, once for p, that its job has no slot left: its active
// window ended, or its max_runs were counted. Every replica says it, once
// each; a schedule whose slots run out otherwise says nothing.
func (l *loop) noteEnded(p *plan) {
	_, until := p.sched.Bounds()
	if until.IsZero() || p.ended.Swap(true) {
		return
	}
	why := "active.until"
	if p.maxRuns > 0 {
		why = fmt.Sprintf("max_runs %d, counted from active.from", p.maxRuns)
	}
	l.s.log.Info("job ended: it has no slot after its end", "job", p.name, "end", until.Format(time.RFC3339), "by", why)
}
