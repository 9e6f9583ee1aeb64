package schedule

import "time"

// Elapsed-time schedules (the hour field is "*" or a step) fire at every
// real second whose local wall clock matches. Within one zone period the
// wall clock is the instant plus a constant offset, so the search maps the
// next (or previous) matching wall time back to an instant with that offset;
// if the instant falls outside the period, the search resumes at the period
// boundary. Matching wall times in a spring-forward gap are never shown, so
// they never fire; those in a fall-back overlap are shown twice and fire
// twice.

// nextElapsed returns the first slot of an elapsed-time schedule after x.
func (s *Schedule) nextElapsed(x, limit time.Time) time.Time {
	for x = x.Add(time.Second); !x.After(limit); {
		w, _, end := wall(x, s.loc)
		match, ok := s.f.next(w, limit.Add(zoneReach))
		if !ok {
			return time.Time{}
		}
		cand := x.Add(match.Sub(w))
		if end.IsZero() || cand.Before(end) {
			return cand
		}
		x = end.UTC()
	}
	return time.Time{}
}

// prevElapsed returns the last slot of an elapsed-time schedule at or
// before x.
func (s *Schedule) prevElapsed(x, limit time.Time) time.Time {
	for !x.Before(limit) {
		w, start, _ := wall(x, s.loc)
		match, ok := s.f.prev(w, limit.Add(-zoneReach))
		if !ok {
			return time.Time{}
		}
		cand := x.Add(match.Sub(w))
		if start.IsZero() || !cand.Before(start) {
			return cand
		}
		x = start.Add(-time.Second).UTC()
	}
	return time.Time{}
}
