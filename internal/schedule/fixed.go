package schedule

import "time"

// Fixed-time schedules (the hour field is numbers) fire once per matching
// wall time: at the first instant the local clock reads that wall time or
// later (see firstReach). Because firstReach is non-decreasing, the slots
// after t are the matching wall times later than any reading the clock has
// shown by t (see highWater), and the slots at or before t are the others.

// nextFixed returns the first slot of a fixed-time schedule after x.
func (s *Schedule) nextFixed(x, limit time.Time) time.Time {
	from := highWater(x, s.loc).Add(time.Second)
	w, ok := s.f.next(from, limit.Add(zoneReach))
	if !ok {
		return time.Time{}
	}
	return firstReach(w, s.loc)
}

// prevFixed returns the last slot of a fixed-time schedule at or before x.
func (s *Schedule) prevFixed(x, limit time.Time) time.Time {
	w, ok := s.f.prev(highWater(x, s.loc), limit.Add(-zoneReach))
	if !ok {
		return time.Time{}
	}
	return firstReach(w, s.loc)
}
