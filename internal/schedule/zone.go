package schedule

import "time"

// zoneReach bounds how far a wall clock can be from UTC: no zone offset, not
// even a historical local mean time, comes near it. A wall time w can only be
// shown at instants within zoneReach of w read as UTC.
const zoneReach = 26 * time.Hour

// period returns the offset of loc at instant x and the zone period
// [start, end) around x, within which the offset does not change. A zero
// start or end means the period is unbounded on that side.
func period(x time.Time, loc *time.Location) (off time.Duration, start, end time.Time) {
	l := x.In(loc)
	_, secs := l.Zone()
	start, end = l.ZoneBounds()
	if !end.IsZero() && !end.After(x) {
		// In the last UTC day of a leap year served by a zone's TZ footer
		// rule, ZoneBounds reports an end a day early, before x
		//. The period really ends at the next boundary,
		// which the day after reports correctly.
		// Should that fail too, a one-second period keeps callers moving.
		qs, qe := x.Add(24 * time.Hour).In(loc).ZoneBounds()
		switch {
		case qs.After(x):
			end = qs
		case qe.IsZero() || qe.After(x):
			end = qe
		default:
			end = x.Add(time.Second)
		}
	}
	return time.Duration(secs) * time.Second, start, end
}

// wall returns the wall clock of instant x in loc, as a UTC time carrying the
// same clock fields, and the zone period [start, end) x lies in.
func wall(x time.Time, loc *time.Location) (w, start, end time.Time) {
	off, start, end := period(x, loc)
	return x.Add(off).UTC(), start, end
}

// firstReach returns the first instant at which the wall clock of loc reads
// w or later: the instant of w if it occurs once, its first occurrence if it
// occurs twice (fall back), and the end of the gap if it does not occur
// (spring forward). It is non-decreasing in w.
//
// It walks the zone periods around w itself instead of calling time.Date,
// whose choice inside a gap or an overlap is unspecified.
func firstReach(w time.Time, loc *time.Location) time.Time {
	x := w.Add(-zoneReach)
	for {
		off, _, end := period(x, loc)
		// Within one period the wall clock is x+off, so the first instant
		// of the period reading w or later is w-off, or the period's start
		// if the clock already reads past w there.
		cand := w.Add(-off)
		if cand.Before(x) {
			cand = x
		}
		if end.IsZero() || cand.Before(end) {
			return cand.UTC()
		}
		x = end
	}
}

// highWater returns the latest wall clock reading of loc at any whole second
// at or before x. It is the wall clock of x, unless the clocks went back in
// the last zoneReach and once read later than they do now.
func highWater(x time.Time, loc *time.Location) time.Time {
	m, start, _ := wall(x, loc)
	floor := x.Add(-zoneReach)
	for !start.IsZero() && start.After(floor) {
		var w time.Time
		w, start, _ = wall(start.Add(-time.Second), loc)
		if w.After(m) {
			m = w
		}
	}
	return m
}
