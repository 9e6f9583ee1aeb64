package schedule

import "time"

// horizonYears is how far Next and Prev look before giving up.
const horizonYears = 5

// Schedule computes the nominal slots of one job. It is immutable and safe
// for concurrent use; the zero value is not usable, call Parse.
type Schedule struct {
	spec  string
	loc   *time.Location
	every time.Duration // > 0 for "@every", else 0
	f     fields
	fixed bool // calendar spec whose hour field is fixed numbers
	dst   DST  // for fixed-time: the rule, spelled out; else zero
	// from and until bound the slots (Unix seconds, inclusive) when set
	// (Within); 0 for no bound.
	from, until int64
}

// Within returns s with its slots bounded to [from, until], each bound
// left out when zero: a schedule held as data's start and end instants.
func (s *Schedule) Within(from, until time.Time) *Schedule {
	b := *s
	b.from, b.until = 0, 0
	if !from.IsZero() {
		b.from = from.Unix()
		if from.Nanosecond() > 0 { // a slot is a whole second: the first not before from
			b.from++
		}
	}
	if !until.IsZero() {
		b.until = until.Unix()
	}
	return &b
}

// Bounds returns the bounds Within set, each zero when not set.
func (s *Schedule) Bounds() (from, until time.Time) {
	if s.from != 0 {
		from = time.Unix(s.from, 0).UTC()
	}
	if s.until != 0 {
		until = time.Unix(s.until, 0).UTC()
	}
	return from, until
}

// Next returns the first slot strictly after t, in UTC, truncated to the
// second; the zero Time if there is none within 5 years of t.
func (s *Schedule) Next(t time.Time) time.Time {
	x := floorSecond(t)
	if s.until != 0 && x.Unix() >= s.until {
		return time.Time{}
	}
	if s.from != 0 && x.Unix() < s.from {
		x = time.Unix(s.from-1, 0).UTC()
	}
	limit := x.AddDate(horizonYears, 0, 0)
	var next time.Time
	switch {
	case s.every > 0:
		next = s.nextEvery(x)
	case s.fixed:
		next = s.nextFixed(x, limit)
	default:
		next = s.nextElapsed(x, limit)
	}
	if next.IsZero() || next.After(limit) || s.until != 0 && next.Unix() > s.until {
		return time.Time{}
	}
	return next
}

// Prev returns the last slot at or before t, in UTC, truncated to the second;
// the zero Time if there is none within 5 years before t. The engine uses it
// at start-up to find slots missed just before the process started.
func (s *Schedule) Prev(t time.Time) time.Time {
	x := floorSecond(t)
	if s.from != 0 && x.Unix() < s.from {
		return time.Time{}
	}
	if s.until != 0 && x.Unix() > s.until {
		x = time.Unix(s.until, 0).UTC()
	}
	limit := x.AddDate(-horizonYears, 0, 0)
	var prev time.Time
	switch {
	case s.every > 0:
		prev = s.prevEvery(x)
	case s.fixed:
		prev = s.prevFixed(x, limit)
	default:
		prev = s.prevElapsed(x, limit)
	}
	if prev.IsZero() || prev.Before(limit) || s.from != 0 && prev.Unix() < s.from {
		return time.Time{}
	}
	return prev
}

// String returns the spec as given to Parse, time zone prefix included.
func (s *Schedule) String() string { return s.spec }

// Location returns the time zone wall-clock fields are read in: the
// "CRON_TZ=" prefix if the spec has one, else the zone given to Parse.
func (s *Schedule) Location() *time.Location { return s.loc }

// Every returns the interval of an "@every" spec, and 0 for calendar specs.
func (s *Schedule) Every() time.Duration { return s.every }

// floorSecond returns t in UTC, rounded down to a whole second.
func floorSecond(t time.Time) time.Time {
	return time.Unix(t.Unix(), 0).UTC()
}
