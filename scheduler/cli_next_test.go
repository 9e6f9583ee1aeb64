package scheduler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// printedSlots runs `next --json` with args and returns the slots it prints
// and each one's skip, by slot.
func printedSlots(t *testing.T, args ...string) ([]time.Time, map[time.Time]string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"next", "--json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("next %v: exit %d: %s", args, code, stderr)
	}
	var out []time.Time
	skips := map[time.Time]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var l struct{ Slot, Skip string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		s, err := time.Parse(time.RFC3339, l.Slot)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
		if l.Skip != "" {
			skips[s] = l.Skip
		}
	}
	return out, skips
}

// The day specials, as `next` prints them over 2026–2028, against a table
// this test builds day by day from the calendar alone: the last day of the
// month from the first of the next, weekdays from time.Weekday.
func TestNextDaySpecials(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	lastDay := func(y int, m time.Month) int { return time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day() }
	weekday := func(y int, m time.Month, d int) time.Weekday {
		return time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()
	}
	for _, tc := range []struct {
		spec, tz string
		loc      *time.Location
		hour     int
		// day returns the day of month y/m the spec fires on.
		day func(y int, m time.Month) int
	}{
		{"0 9 LW * *", "Europe/Berlin", berlin, 9, func(y int, m time.Month) int {
			d := lastDay(y, m)
			for weekday(y, m, d) == time.Saturday || weekday(y, m, d) == time.Sunday {
				d--
			}
			return d
		}},
		{"0 10 * * MON#2", "UTC", time.UTC, 10, func(y int, m time.Month) int {
			mondays := 0
			for d := 1; ; d++ {
				if weekday(y, m, d) == time.Monday {
					if mondays++; mondays == 2 {
						return d
					}
				}
			}
		}},
		{"0 18 * * 5L", "UTC", time.UTC, 18, func(y int, m time.Month) int {
			d := lastDay(y, m)
			for weekday(y, m, d) != time.Friday {
				d--
			}
			return d
		}},
		{"0 2 L-3 * *", "UTC", time.UTC, 2, func(y int, m time.Month) int { return lastDay(y, m) - 3 }},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			var want []time.Time
			for y := 2026; y <= 2028; y++ {
				for m := time.January; m <= time.December; m++ {
					want = append(want, time.Date(y, m, tc.day(y, m), tc.hour, 0, 0, 0, tc.loc).UTC())
				}
			}
			got, _ := printedSlots(t, "--schedule", tc.spec, "--timezone", tc.tz, "-n", "36", "--from", "2025-12-31T23:00:00Z")
			if !slices.Equal(got, want) {
				t.Errorf("next printed\n%v\nwant\n%v", got, want)
			}
		})
	}
	// Two checked by hand: February of the leap year 2028 ends on the 29th,
	// a Tuesday, so L-3 is the 26th; May 2026 ends on a Sunday, so LW is
	// Friday the 29th.
	if got, _ := printedSlots(t, "--schedule", "0 2 L-3 * *", "-n", "1", "--from", "2028-02-01T00:00:00Z"); !got[0].Equal(time.Date(2028, 2, 26, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("L-3 of February 2028: %v", got[0])
	}
	if got, _ := printedSlots(t, "--schedule", "0 9 LW * *", "--timezone", "Europe/Berlin", "-n", "1", "--from", "2026-05-01T00:00:00Z"); !got[0].Equal(time.Date(2026, 5, 29, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("LW of May 2026: %v", got[0])
	}
}

// A job's dst rule, as `next` shows it around Europe/Berlin's 2026 jumps,
// and its calendar's dates shown skipped.
func TestNextDSTAndCalendars(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "c.yaml")
	doc := `
calendars: {holidays-de: {dates: [2026-10-26]}}
defaults: {timezone: Europe/Berlin}
jobs:
  hello: {schedule: "30 2 * * *", run: hello}
  gap-skip: {schedule: "30 2 * * *", run: hello, dst: {gap: skip}}
  both: {schedule: "30 2 * * *", run: hello, dst: {repeat: both}, except: [holidays-de]}
`
	if err := os.WriteFile(conf, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	stamps := func(ts []time.Time) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Format(time.RFC3339))
		}
		return out
	}
	spring := []string{"--config", conf, "-n", "3", "--from", "2026-03-28T00:00:00Z"}
	if got, _ := printedSlots(t, append(spring, "--job", "hello")...); !slices.Equal(stamps(got), []string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}) {
		t.Errorf("default rule on the spring-forward day: %v", stamps(got))
	}
	if got, _ := printedSlots(t, append(spring, "--job", "gap-skip")...); !slices.Equal(stamps(got), []string{"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}) {
		t.Errorf("gap skip: %v, want no slot on 2026-03-29", stamps(got))
	}
	got, skips := printedSlots(t, "--config", conf, "--job", "both", "-n", "4", "--from", "2026-10-24T12:00:00Z")
	if !slices.Equal(stamps(got), []string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z"}) {
		t.Errorf("repeat both: %v, want 02:30 twice on 2026-10-25", stamps(got))
	}
	if len(skips) != 1 || skips[time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)] != "calendar holidays-de" {
		t.Errorf("skips %v, want 2026-10-26 skipped for calendar holidays-de", skips)
	}
	code, stdout, _ := runCLI(t, "next", "--config", conf, "--job", "both", "-n", "3", "--from", "2026-10-25T12:00:00Z")
	if code != ExitOK || !strings.Contains(stdout, "2026-10-26T01:30:00Z  2026-10-26T02:30:00+01:00 Europe/Berlin  skipped: calendar holidays-de") {
		t.Errorf("next: exit %d\n%s", code, stdout)
	}
}
