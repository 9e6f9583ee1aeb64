// Calendars a job skips, and the slots it runs at most: what a job's spec
// says beyond its schedule about which slots are its to run. Both are a
// pure function of the spec, so every replica skips the same slots and
// ends the job at the same one.

package engine

import (
	"fmt"
	"strings"
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

// skipDates maps each date of cals to the reason of the first calendar
// that has it; nil for none.
func skipDates(cals []Calendar) map[string]string {
	if len(cals) == 0 {
		return nil
	}
	out := make(map[string]string)
	for _, c := range cals {
		for _, d := range c.Dates {
			if _, ok := out[d]; !ok {
				out[d] = CalendarReason(c.Name)
			}
		}
	}
	return out
}

// excludedBy returns the reason slot of sched is skipped for among dates
// (skipDates), or "" when no calendar skips it.
func excludedBy(dates map[string]string, sched *schedule.Schedule, slot time.Time) string {
	if dates == nil || sched == nil {
		return ""
	}
	return dates[slot.In(sched.Location()).Format(time.DateOnly)]
}

// excluded returns the reason p's slot is skipped for by a calendar of
// its spec, or "".
func (p *plan) excluded(slot time.Time) string { return excludedBy(p.skipDates, p.sched, slot) }

// Excluded returns the reason slot of j is skipped for by a calendar of
// its spec, or "": what `next` shows beside a slot.
func Excluded(j JobSpec, slot time.Time) string {
	return excludedBy(skipDates(j.Except), j.Schedule, slot)
}

// sched is the schedule of b, for its zone; nil when b's cannot be read
// (its slots are then no calendar's to skip).
func sched(b SpecBody) *schedule.Schedule {
	s, err := b.Slots()
	if err != nil {
		return nil
	}
	return s
}

// LastOfRuns returns the slot of sched that is the n-th, counted from
// from (included), that no calendar of cals skips: where a job with
// max_runs n ends. Zero when the schedule has fewer such slots in the 5
// years Next looks ahead from each.
func LastOfRuns(sched *schedule.Schedule, cals []Calendar, from time.Time, n int) time.Time {
	dates := skipDates(cals)
	s := sched.Next(from.Add(-time.Second))
	for count := 0; !s.IsZero(); s = sched.Next(s) {
		if excludedBy(dates, sched, s) == "" {
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

// byCalendar rewrites the skips of reqs whose slot a calendar of its job
// skips as that calendar's: a slot missed while no replica ran, or not
// caught up, on a holiday was never to run.
func (l *loop) byCalendar(reqs []slotstore.SkipRequest) {
	for i, q := range reqs {
		if strings.HasPrefix(q.Reason, calendarPrefix) {
			continue
		}
		p := l.s.jobs().plan(q.Job)
		if p == nil || p.skipDates == nil {
			continue
		}
		if reason := p.excluded(q.Slot); reason != "" {
			reqs[i] = p.calendarSkip(q.Slot, reason)
		}
	}
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
