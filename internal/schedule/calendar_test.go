package schedule

import (
	"testing"
	"time"
)

func TestNextCalendar(t *testing.T) {
	tests := []struct {
		spec, tz string
		from     string
		want     []string // the next slots, in order; "" is the zero Time
	}{
		{"0 0 29 2 *", "", "2026-03-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 29 2 *", "", "2096-03-01T00:00:00Z", []string{""}}, // 2100 is no leap year; 2104 is too far
		{"0 0 30 2 *", "", "2026-01-01T00:00:00Z", []string{""}},
		{"0 0 31 4 *", "Europe/Berlin", "2026-01-01T00:00:00Z", []string{""}},
		{"*/1 * * * * *", "", "2026-06-01T23:59:58.5Z", []string{"2026-06-01T23:59:59Z", "2026-06-02T00:00:00Z", "2026-06-02T00:00:01Z"}},
		{"*/1 * * * * *", "Europe/Berlin", "2026-10-25T00:59:58Z", []string{"2026-10-25T00:59:59Z", "2026-10-25T01:00:00Z", "2026-10-25T01:00:01Z"}},
		{"15 30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:15Z"}},
		{"0 9-17/4 * * 1-5", "America/New_York", "2026-03-06T20:00:00Z", []string{"2026-03-06T22:00:00Z", "2026-03-09T13:00:00Z", "2026-03-09T17:00:00Z"}},
		{"0 0 1 * 1", "", "2026-06-01T00:00:00Z", []string{"2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z"}}, // Dom or Dow
		{"0 0 1 * *", "", "2026-12-15T00:00:00Z", []string{"2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"}},
		{"@weekly", "UTC", "2026-06-03T00:00:00Z", []string{"2026-06-07T00:00:00Z", "2026-06-14T00:00:00Z"}},
		{"CRON_TZ=America/New_York 0 9 * * *", "Europe/Berlin", "2026-06-01T00:00:00Z", []string{"2026-06-01T13:00:00Z"}},
		{"@yearly", "Asia/Tokyo", "2026-06-01T00:00:00Z", []string{"2026-12-31T15:00:00Z"}},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.spec, tc.tz)
		x := mustTime(t, tc.from)
		for i, w := range tc.want {
			x = s.Next(x)
			got := ""
			if !x.IsZero() {
				got = x.Format(time.RFC3339)
			}
			if got != w {
				t.Errorf("%s in %q from %s: slot %d = %q, want %q", tc.spec, tc.tz, tc.from, i, got, w)
				break
			}
		}
	}
}

// Next and Prev answer in UTC, to the second, whatever the zone and
// precision of the time asked about.
func TestResultsAreUTCSeconds(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 29, 2, 59, 59, 999_999_999, time.FixedZone("X", 3600)).In(berlin)
	for _, spec := range []string{"30 2 * * *", "*/15 * * * *", "@every 45s", "*/1 * * * * *"} {
		s := mustParse(t, spec, "Europe/Berlin")
		for _, x := range []time.Time{s.Next(from), s.Prev(from)} {
			if x.Location() != time.UTC || x.Nanosecond() != 0 {
				t.Errorf("%s: slot %v is not UTC whole seconds", spec, x)
			}
		}
		if p := s.Prev(from); p.After(from) {
			t.Errorf("%s: Prev(%v) = %v is after it", spec, from, p)
		}
		if n := s.Next(from); !n.After(from) {
			t.Errorf("%s: Next(%v) = %v is not after it", spec, from, n)
		}
	}
}

func TestPrevLimits(t *testing.T) {
	s := mustParse(t, "0 0 29 2 *", "")
	if got, want := s.Prev(mustTime(t, "2028-02-29T00:00:00Z")), mustTime(t, "2028-02-29T00:00:00Z"); !got.Equal(want) {
		t.Errorf("Prev at a slot = %v, want the slot %v", got, want)
	}
	if got, want := s.Prev(mustTime(t, "2028-02-28T23:59:59Z")), mustTime(t, "2024-02-29T00:00:00Z"); !got.Equal(want) {
		t.Errorf("Prev = %v, want %v", got, want)
	}
	if got := mustParse(t, "0 0 30 2 *", "").Prev(mustTime(t, "2026-01-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("Prev of a spec that never fires = %v, want the zero Time", got)
	}
}
