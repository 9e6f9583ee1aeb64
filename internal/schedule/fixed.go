package schedule

import "time"

// Fixed-time schedules (the hour field is numbers) fire once per matching
// wall time. By default (GapShift, RepeatFirst) a wall time fires at the
// first instant the local clock reads it or later (see firstReach). Because
// firstReach is non-decreasing, the slots after t are the matching wall
// times later than any reading the clock has shown by t (see highWater), and
// the slots at or before t are the others.
//
// The other rules are built from the default and the elapsed-time rule,
// which fires at every instant whose wall clock matches:
//
//   - GapSkip, RepeatBoth is the elapsed-time rule.
//   - GapSkip, RepeatFirst keeps the default slots whose wall clock matches:
//     those of a wall time the clock shows when first reaching it, not the
//     end of a gap standing for a skipped one.
//   - GapShift, RepeatBoth is the default slots and the elapsed-time ones
//     together: the repeated wall times fire again.

// nextFixed returns the first slot of a fixed-time schedule after x.
func (s *Schedule) nextFixed(x, limit time.Time) time.Time {
	switch {
	case s.dst.Gap == GapSkip && s.dst.Repeat == RepeatBoth:
		return s.nextElapsed(x, limit)
	case s.dst.Gap == GapSkip:
		for {
			n := s.nextReach(x, limit)
			if n.IsZero() || n.After(limit) || s.shows(n) {
				return n
			}
			x = n
		}
	case s.dst.Repeat == RepeatBoth:
		a, b := s.nextReach(x, limit), s.nextElapsed(x, limit)
		if a.IsZero() || !b.IsZero() && b.Before(a) {
			return b
		}
		return a
	}
	return s.nextReach(x, limit)
}

// prevFixed returns the last slot of a fixed-time schedule at or before x.
func (s *Schedule) prevFixed(x, limit time.Time) time.Time {
	switch {
	case s.dst.Gap == GapSkip && s.dst.Repeat == RepeatBoth:
		return s.prevElapsed(x, limit)
	case s.dst.Gap == GapSkip:
		for {
			p := s.prevReach(x, limit)
			if p.IsZero() || p.Before(limit) || s.shows(p) {
				return p
			}
			x = p.Add(-time.Second)
		}
	case s.dst.Repeat == RepeatBoth:
		a, b := s.prevReach(x, limit), s.prevElapsed(x, limit)
		if a.IsZero() || !b.IsZero() && b.After(a) {
			return b
		}
		return a
	}
	return s.prevReach(x, limit)
}

// shows reports whether the wall clock at instant x matches the spec.
func (s *Schedule) shows(x time.Time) bool {
	w, _, _ := wall(x, s.loc)
	_, ok := s.f.next(w, w)
	return ok
}

// nextReach returns the first slot after x under the default rule.
func (s *Schedule) nextReach(x, limit time.Time) time.Time {
	from := highWater(x, s.loc).Add(time.Second)
	w, ok := s.f.next(from, limit.Add(zoneReach))
	if !ok {
		return time.Time{}
	}
	return firstReach(w, s.loc)
}

// prevReach returns the last slot at or before x under the default rule.
func (s *Schedule) prevReach(x, limit time.Time) time.Time {
	w, ok := s.f.prev(highWater(x, s.loc), limit.Add(-zoneReach))
	if !ok {
		return time.Time{}
	}
	return firstReach(w, s.loc)
}
