package schedule

import (
	"testing"
	"time"
)

// transitionDays are the local dates of the 2026 transitions in
// schedule_test.go.
var transitionDays = map[string][]time.Time{
	"Europe/Berlin":       {date(2026, 3, 29), date(2026, 10, 25)},
	"America/New_York":    {date(2026, 3, 8), date(2026, 11, 1)},
	"Australia/Lord_Howe": {date(2026, 4, 5), date(2026, 10, 4)},
	"America/Santiago":    {date(2026, 4, 4), date(2026, 9, 6)},
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// A daily fixed-time schedule fires exactly once on each local day of a
// five-day window around every transition, whatever the transition does to
// its wall time.
func TestFixedFiresOncePerLocalDay(t *testing.T) {
	specs := []string{"30 2 * * *", "0 2 * * *", "30 1 * * *", "45 1 * * *", "0 0 * * *", "30 23 * * *", "@daily", "15 2 * * *"}
	for tz, days := range transitionDays {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range days {
			for _, spec := range specs {
				s := mustParse(t, spec, tz)
				y, m, d := day.Date()
				from := time.Date(y, m, d-2, 0, 0, 0, 0, loc)
				to := time.Date(y, m, d+3, 0, 0, 0, 0, loc)
				perDay := map[string]int{}
				for x := s.Next(from.Add(-time.Second)); x.Before(to); x = s.Next(x) {
					perDay[x.In(loc).Format(time.DateOnly)]++
				}
				for i := -2; i <= 2; i++ {
					local := time.Date(y, m, d+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
					if n := perDay[local]; n != 1 {
						t.Errorf("%s in %s: %d slots on %s, want 1 (all: %v)", spec, tz, n, local, perDay)
					}
				}
			}
		}
	}
}

// The slots around each transition agree with a brute-force reading of the
// rule, minute by minute: an elapsed-time spec fires at every real minute
// whose wall clock matches; a fixed-time spec fires at a real minute when the
// wall clock reaches, for the first time, a matching wall time.
func TestAgainstBruteForce(t *testing.T) {
	specs := []string{
		"30 2 * * *", "0,30 2 * * *", "*/15 1-3 * * *", "45 23 * * *", "0 0 * * *", "59 1 * * 0", "@weekly",
		"*/30 * * * *", "0 * * * *", "0 */2 * * *", "15 0-23/3 * * *", "*/20 * 4 * *", "@hourly",
	}
	for tz, days := range transitionDays {
		for _, day := range days {
			for _, spec := range specs {
				s := mustParse(t, spec, tz)
				from, to := day.Add(-36*time.Hour), day.Add(36*time.Hour)
				var got, want []time.Time
				for x := s.Next(from.Add(-time.Second)); x.Before(to); x = s.Next(x) {
					got = append(got, x)
				}
				// The latest wall clock reading so far; no transition is
				// within a day of from, so it is the reading a minute before.
				high := naiveWall(from.Add(-time.Minute), s.loc)
				for x := from; x.Before(to); x = x.Add(time.Minute) {
					w := naiveWall(x, s.loc)
					if s.fixed {
						for c := high.Add(time.Minute); !c.After(w); c = c.Add(time.Minute) {
							if naiveMatch(s, c) {
								want = append(want, x)
								break
							}
						}
					} else if naiveMatch(s, w) {
						want = append(want, x)
					}
					if w.After(high) {
						high = w
					}
				}
				if len(got) != len(want) {
					t.Errorf("%s in %s near %s: %d slots, brute force %d\n got %v\nwant %v", spec, tz, day.Format(time.DateOnly), len(got), len(want), got, want)
					continue
				}
				for i := range got {
					if !got[i].Equal(want[i]) {
						t.Errorf("%s in %s near %s: slot %d is %v, brute force %v", spec, tz, day.Format(time.DateOnly), i, got[i], want[i])
						break
					}
				}
			}
		}
	}
}

// naiveWall reads the wall clock of x in loc with the time package alone.
func naiveWall(x time.Time, loc *time.Location) time.Time {
	l := x.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// naiveMatch reports whether wall time w matches every field of s.
func naiveMatch(s *Schedule, w time.Time) bool {
	has := func(set uint64, v int) bool { return set&(1<<uint(v)) != 0 }
	dom, dow := has(s.f.dom, w.Day()), has(s.f.dow, int(w.Weekday()))
	day := dom || dow
	if s.f.dom&starBit != 0 || s.f.dow&starBit != 0 {
		day = dom && dow
	}
	return day && has(s.f.month, int(w.Month())) && has(s.f.hour, w.Hour()) &&
		has(s.f.minute, w.Minute()) && has(s.f.second, w.Second())
}
