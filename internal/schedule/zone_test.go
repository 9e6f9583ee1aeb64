package schedule

import (
	"testing"
	"time"
)

// In the last UTC day of a leap year past a zone's explicit transitions,
// time.ZoneBounds reports a period end before the instant.
// period must still return bounds around the instant, and Next and Prev
// must still walk through that day (they used to loop forever).
func TestLeapYearZoneBounds(t *testing.T) {
	for _, tz := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"} {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []time.Time{
			time.Date(2040, 12, 31, 0, 0, 0, 0, time.UTC),
			time.Date(2040, 12, 31, 12, 0, 0, 0, time.UTC),
			time.Date(2056, 12, 31, 23, 59, 59, 0, time.UTC),
		} {
			_, start, end := period(x, loc)
			if start.After(x) || (!end.IsZero() && !end.After(x)) {
				t.Errorf("%s: period(%v) = [%v, %v), not around it", tz, x, start, end)
			}
		}
	}

	from, to := mustTime(t, "2040-12-30T12:00:00Z"), mustTime(t, "2041-01-02T12:00:00Z")
	tests := []struct {
		spec string
		n    int // slots in [from, to)
	}{
		{"0 * * * *", 72},
		{"*/30 * * * *", 144},
		{"30 2 * * *", 3},
		{"@daily", 3},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.spec, "Europe/Berlin")
		got := slotsBetween(s, from, to)
		if len(got) != tc.n {
			t.Errorf("%s in Europe/Berlin, [%v, %v): %d slots, want %d: %v", tc.spec, from, to, len(got), tc.n, got)
		}
		if p := s.Prev(mustTime(t, "2040-12-31T12:00:00Z")); p.IsZero() || p.After(mustTime(t, "2040-12-31T12:00:00Z")) {
			t.Errorf("%s in Europe/Berlin: Prev on 2040-12-31 = %v", tc.spec, p)
		}
	}
}
