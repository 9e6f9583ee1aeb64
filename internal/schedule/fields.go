package schedule

import (
	"math/bits"
	"time"
)

// starBit is the bit robfig/cron sets in a field written as a bare "*" or "?".
const starBit = 1 << 63

// fields holds the bit sets of a calendar spec, as parsed by robfig/cron.
// Bit i of a set means the value i matches.
//
// Its methods search civil (wall-clock) time: they take and return times in
// UTC whose clock fields are the wall clock being searched. UTC has no DST,
// so these searches are plain calendar arithmetic; the zone is dealt with by
// the callers (fixed.go, elapsed.go).
type fields struct {
	second, minute, hour, dom, month, dow uint64
	// sp holds the day specials ("L", "15W", "MON#2", "5L"...), nil when
	// the spec has none, so that plain specs never look at them.
	sp *daySpecials
}

// dayMatches reports whether the day of w matches, as cron defines it: if
// either the day-of-month or the day-of-week field is "*", both must match;
// otherwise either may. A field with a special is never "*".
func (f *fields) dayMatches(w time.Time) bool {
	domMatch := f.dom&(1<<uint(w.Day())) != 0
	dowMatch := f.dow&(1<<uint(w.Weekday())) != 0
	if f.sp != nil {
		domMatch = domMatch || f.sp.domMatches(w)
		dowMatch = dowMatch || f.sp.dowMatches(w)
	}
	if f.dom&starBit != 0 || f.dow&starBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// next returns the first matching wall time at or after w, or false if there
// is none up to limit.
func (f *fields) next(w, limit time.Time) (time.Time, bool) {
	for !w.After(limit) {
		y, mo, d := w.Date()
		h, mi, s := w.Clock()
		switch {
		case f.month&(1<<uint(mo)) == 0:
			w = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		case !f.dayMatches(w):
			w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case nextBit(f.hour, h) != h:
			if b := nextBit(f.hour, h); b < 0 {
				w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, b, 0, 0, 0, time.UTC)
			}
		case nextBit(f.minute, mi) != mi:
			if b := nextBit(f.minute, mi); b < 0 {
				w = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, h, b, 0, 0, time.UTC)
			}
		case nextBit(f.second, s) != s:
			if b := nextBit(f.second, s); b < 0 {
				w = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, h, mi, b, 0, time.UTC)
			}
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// prev returns the last matching wall time at or before w, or false if there
// is none down to limit.
func (f *fields) prev(w, limit time.Time) (time.Time, bool) {
	for !w.Before(limit) {
		y, mo, d := w.Date()
		h, mi, s := w.Clock()
		switch {
		case f.month&(1<<uint(mo)) == 0:
			w = time.Date(y, mo, 1, 0, 0, -1, 0, time.UTC)
		case !f.dayMatches(w):
			w = time.Date(y, mo, d, 0, 0, -1, 0, time.UTC)
		case prevBit(f.hour, h) != h:
			if b := prevBit(f.hour, h); b < 0 {
				w = time.Date(y, mo, d, 0, 0, -1, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, b, 59, 59, 0, time.UTC)
			}
		case prevBit(f.minute, mi) != mi:
			if b := prevBit(f.minute, mi); b < 0 {
				w = time.Date(y, mo, d, h, 0, -1, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, h, b, 59, 0, time.UTC)
			}
		case prevBit(f.second, s) != s:
			if b := prevBit(f.second, s); b < 0 {
				w = time.Date(y, mo, d, h, mi, -1, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, h, mi, b, 0, time.UTC)
			}
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// nextBit returns the smallest i >= from whose bit is set in set (ignoring
// starBit), or -1.
func nextBit(set uint64, from int) int {
	rest := (set &^ starBit) >> uint(from)
	if rest == 0 {
		return -1
	}
	return from + bits.TrailingZeros64(rest)
}

// prevBit returns the largest i <= from whose bit is set in set, or -1.
func prevBit(set uint64, from int) int {
	rest := (set &^ starBit) << uint(63-from)
	if rest == 0 {
		return -1
	}
	return from - bits.LeadingZeros64(rest)
}
