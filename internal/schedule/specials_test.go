package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The day specials, decided day by day from first principles with the time
// package alone, never with the code under test.
var specialRules = []struct {
	spec, tz string
	hour     int
	day      func(d time.Time) bool // d is a civil date, in UTC
}{
	{"0 9 LW * *", "Europe/Berlin", 9, func(d time.Time) bool {
		// The last day of the month that is Monday to Friday.
		last := d.AddDate(0, 1, -d.Day()+1).AddDate(0, 0, -1)
		for last.Weekday() == time.Saturday || last.Weekday() == time.Sunday {
			last = last.AddDate(0, 0, -1)
		}
		return d.Equal(last)
	}},
	{"0 10 * * MON#2", "UTC", 10, func(d time.Time) bool {
		// A Monday with exactly one Monday before it in its month.
		mondays := 0
		for e := d.AddDate(0, 0, -d.Day()+1); e.Before(d); e = e.AddDate(0, 0, 1) {
			if e.Weekday() == time.Monday {
				mondays++
			}
		}
		return d.Weekday() == time.Monday && mondays == 1
	}},
	{"0 18 * * 5L", "UTC", 18, func(d time.Time) bool {
		// A Friday whose next Friday is in another month.
		return d.Weekday() == time.Friday && d.AddDate(0, 0, 7).Month() != d.Month()
	}},
	{"0 2 L-3 * *", "UTC", 2, func(d time.Time) bool {
		// Three days later is the month's last day.
		return d.AddDate(0, 0, 3).Month() == d.Month() && d.AddDate(0, 0, 4).Month() != d.Month()
	}},
}

// TestSpecialsAgainstCalendar walks every calendar day of 2026–2028 and
// compares the slots of Next, and of Prev walking back, with the days the
// rules above pick.
func TestSpecialsAgainstCalendar(t *testing.T) {
	from, to := date(2026, 1, 1), date(2029, 1, 1)
	for _, r := range specialRules {
		loc, err := time.LoadLocation(r.tz)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
			if r.day(d) {
				y, m, dd := d.Date()
				want = append(want, time.Date(y, m, dd, r.hour, 0, 0, 0, loc).UTC().Format(time.RFC3339))
			}
		}
		s := mustParse(t, r.spec, r.tz)
		lo, hi := time.Date(2026, 1, 1, 0, 0, 0, 0, loc), time.Date(2029, 1, 1, 0, 0, 0, 0, loc)
		if got := slotsBetween(s, lo, hi); !slices.Equal(got, want) {
			t.Errorf("%s in %s, Next:\n got %v\nwant %v", r.spec, r.tz, got, want)
		}
		var back []string
		for x := s.Prev(hi.Add(-time.Second)); !x.Before(lo); x = s.Prev(x.Add(-time.Second)) {
			back = append(back, x.Format(time.RFC3339))
		}
		slices.Reverse(back)
		if !slices.Equal(back, want) {
			t.Errorf("%s in %s, Prev:\n got %v\nwant %v", r.spec, r.tz, back, want)
		}
		if len(want) != 36 {
			t.Errorf("%s: %d slots in three years, want one a month", r.spec, len(want))
		}
	}
}

// Slots checked by hand against a calendar.
func TestSpecialsByHand(t *testing.T) {
	tests := []struct {
		spec, tz, from string
		want           []string
	}{
		// 2028 is a leap year: February has 29 days, L-3 is the 26th.
		{"0 2 L-3 * *", "", "2028-02-01T00:00:00Z", []string{"2028-02-26T02:00:00Z", "2028-03-28T02:00:00Z"}},
		{"0 2 L-3 * *", "", "2027-02-01T00:00:00Z", []string{"2027-02-25T02:00:00Z"}},
		// May 2026 ends on a Sunday: LW is Friday the 29th (07:00Z in CEST).
		{"0 9 LW * *", "Europe/Berlin", "2026-05-01T00:00:00Z", []string{"2026-05-29T07:00:00Z", "2026-06-30T07:00:00Z"}},
		// January 2026 ends on a Saturday: LW is Friday the 30th (08:00Z in CET).
		{"0 9 LW * *", "Europe/Berlin", "2026-01-01T00:00:00Z", []string{"2026-01-30T08:00:00Z"}},
		// August 2026 starts on a Saturday: 1W is Monday the 3rd, not July 31st.
		{"0 0 1W * *", "", "2026-07-15T00:00:00Z", []string{"2026-08-03T00:00:00Z", "2026-09-01T00:00:00Z"}},
		// May 2026 ends on a Sunday: 31W is Friday the 29th. April has no 31st.
		{"0 0 31W * *", "", "2026-03-31T00:00:00Z", []string{"2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z"}},
		// 15W: the 15th of August 2026 is a Saturday, of November a Sunday.
		{"0 0 15W 8,11 *", "", "2026-01-01T00:00:00Z", []string{"2026-08-14T00:00:00Z", "2026-11-16T00:00:00Z"}},
		// June 2026 starts on a Monday: MON#2 is the 8th, and there is no 5th
		// Monday in July 2026 (the 6th to the 27th) but there is in August.
		{"0 10 * * MON#2", "", "2026-06-01T00:00:00Z", []string{"2026-06-08T10:00:00Z"}},
		{"0 0 * * 1#5", "", "2026-06-30T00:00:00Z", []string{"2026-08-31T00:00:00Z"}},
		// The last Friday of January 2026 is the 30th, of February the 27th.
		{"0 18 * * FRIL", "", "2026-01-01T00:00:00Z", []string{"2026-01-30T18:00:00Z", "2026-02-27T18:00:00Z"}},
		{"0 0 * * 7L", "", "2026-03-01T00:00:00Z", []string{"2026-03-29T00:00:00Z"}},
		// Plain values and specials in one field.
		{"0 0 1,15,L * *", "", "2026-02-02T00:00:00Z", []string{"2026-02-15T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"0 0 * * MON#1,FRIL", "", "2026-03-01T00:00:00Z", []string{"2026-03-02T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-06T00:00:00Z"}},
		// Both day fields restricted: either matches.
		{"0 0 L * MON#1", "", "2026-03-03T00:00:00Z", []string{"2026-03-31T00:00:00Z", "2026-04-06T00:00:00Z", "2026-04-30T00:00:00Z"}},
		// A "*" beside a special is still restricted.
		{"0 0 *,L * MON", "", "2026-03-03T00:00:00Z", []string{"2026-03-04T00:00:00Z"}},
		{"0 0 L * *", "", "2026-01-01T00:00:00Z", []string{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z"}},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.spec, tc.tz)
		x := mustTime(t, tc.from)
		for i, w := range tc.want {
			x = s.Next(x)
			if got := x.Format(time.RFC3339); got != w {
				t.Errorf("%s from %s: slot %d = %s, want %s", tc.spec, tc.from, i, got, w)
				break
			}
			if p := s.Prev(x.Add(time.Hour)); !p.Equal(x) {
				t.Errorf("%s: Prev(%v+1h) = %v", tc.spec, x, p)
			}
		}
	}
}

func TestParseSpecialsErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"0 0 L-40 * *", `day-of-month field "L-40": offset 40 out of range 1–30`},
		{"0 0 L-0 * *", `day-of-month field "L-0": offset 0 out of range 1–30`},
		{"0 0 L-x * *", `day-of-month field "L-x": offset "X" after L- is not a number`},
		{"0 0 1,L-31 * *", `day-of-month field "L-31": offset 31 out of range 1–30`},
		{"0 0 32W * *", `day-of-month field "32W": day 32 out of range 1–31`},
		{"0 0 0W * *", `day-of-month field "0W": day 0 out of range 1–31`},
		{"0 0 W * *", `day-of-month field "W": W needs a day before it, e.g. "15W"`},
		{"0 0 xW * *", `day-of-month field "xW": "X" before W is not a day of the month`},
		{"0 0 1#2 * *", `day-of-month field "1#2": # belongs in day-of-week, e.g. "MON#2"`},
		{"0 0 5L * *", `day-of-month field "5L": not a day-of-month special`},
		{"0 0 L/2 * *", `day-of-month field "L/2": not a day-of-month special`},
		{"0 0 L, * *", `day-of-month field "L,": empty item in the list`},
		{"0 0 * * MON#6", `day-of-week field "MON#6": occurrence 6 out of range 1–5`},
		{"0 0 * * 1#0", `day-of-week field "1#0": occurrence 0 out of range 1–5`},
		{"0 0 * * 1#x", `day-of-week field "1#x": occurrence "X" after # is not a number`},
		{"0 0 * * 8#1", `day-of-week field "8#1": day "8" is not 0–7 or SUN–SAT`},
		{"0 0 * * #1", `day-of-week field "#1": day "" is not 0–7 or SUN–SAT`},
		{"0 0 * * L", `day-of-week field "L": L needs a day before it in day-of-week, e.g. "5L"`},
		{"0 0 * * XYZL", `day-of-week field "XYZL": day "XYZ" is not 0–7 or SUN–SAT`},
		{"0 0 * * 5W", `day-of-week field "5W": 5W belongs in day-of-month`},
		{"0 0 * * LW", `day-of-week field "LW": LW belongs in day-of-month`},
		{"0 0 * * L-2", `day-of-week field "L-2": L-2 belongs in day-of-month`},
		{"0 L * * *", `hour field "L": L is only allowed in day-of-month or day-of-week`},
		{"L 0 * * *", `minute field "L": L is only allowed in day-of-month or day-of-week`},
		{"0 0 * 5L *", `month field "5L": 5L is only allowed in day-of-month or day-of-week`},
		{"0 0 * 1#2 *", `month field "1#2": 1#2 is only allowed in day-of-month or day-of-week`},
		{"15W 0 0 * * *", `second field "15W": 15W is only allowed in day-of-month or day-of-week`},
		{"0 0 L 13 *", "month 13 out of range 1–12"},
		{"0 0 L,40 * *", "day-of-month 40 out of range 1–31"},
	}
	for _, tc := range tests {
		s, err := Parse(tc.spec, "")
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, s, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error = %q, want ErrInvalid containing %q", tc.spec, err, tc.want)
		}
	}
}

// Specials are case-insensitive; day-of-week accepts 0–7 and the names.
func TestParseSpecials(t *testing.T) {
	for _, spec := range []string{
		"0 0 l * *", "0 0 lw * *", "0 0 l-1 * *", "0 0 15w * *", "0 0 * * mon#1", "0 0 * * Fri#5",
		"0 0 * * 0#1", "0 0 * * 7#1", "0 0 * * 0L", "0 0 * * satl", "0 0 1-5,L-2 * *", "0 0 ? * 1-5,5L",
		"CRON_TZ=Europe/Berlin 0 30 2 LW * *", "0 0 L * 1-5",
	} {
		if _, err := Parse(spec, ""); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
	}
}
