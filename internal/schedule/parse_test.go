package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec, tz string
		zone     string        // Location().String()
		every    time.Duration // Every()
		fixed    bool          // fixed-time (true) or elapsed-time (false); ignored for @every
	}{
		{"30 2 * * *", "Europe/Berlin", "Europe/Berlin", 0, true},
		{"0 1,13 * * *", "", "UTC", 0, true},
		{"0 9-17 * * 1-5", "America/New_York", "America/New_York", 0, true},
		{"*/15 9-17 * * mon-fri", "UTC", "UTC", 0, true},
		{"0 30 2 * * *", "", "UTC", 0, true},
		{"*/15 * * * *", "", "UTC", 0, false},
		{"0 * * * *", "", "UTC", 0, false},
		{"0 */2 * * *", "", "UTC", 0, false},
		{"0 0-23/3 * * *", "", "UTC", 0, false},
		{"0 3/6 * * *", "", "UTC", 0, false},
		{"0 ? * * *", "", "UTC", 0, false},
		{"*/1 * * * * *", "", "UTC", 0, false},
		{"0 0 */2 * * *", "", "UTC", 0, false},
		{"@yearly", "", "UTC", 0, true},
		{"@annually", "", "UTC", 0, true},
		{"@monthly", "", "UTC", 0, true},
		{"@weekly", "", "UTC", 0, true},
		{"@daily", "", "UTC", 0, true},
		{"@midnight", "", "UTC", 0, true},
		{"@hourly", "", "UTC", 0, false},
		{"@every 30s", "Europe/Berlin", "Europe/Berlin", 30 * time.Second, false},
		{"@every 1h30m", "", "UTC", 90 * time.Minute, false},
		{"CRON_TZ=America/New_York 0 9 * * *", "Europe/Berlin", "America/New_York", 0, true},
		{"TZ=Asia/Tokyo 0 9 * * *", "", "Asia/Tokyo", 0, true},
		{"CRON_TZ=Europe/Berlin @every 7s", "", "Europe/Berlin", 7 * time.Second, false},
		{"  0 9 * * *  ", "", "UTC", 0, true},
	}
	for _, tc := range tests {
		s, err := Parse(tc.spec, tc.tz)
		if err != nil {
			t.Errorf("Parse(%q, %q): %v", tc.spec, tc.tz, err)
			continue
		}
		if s.String() != tc.spec {
			t.Errorf("Parse(%q).String() = %q, want the spec as given", tc.spec, s.String())
		}
		if got := s.Location().String(); got != tc.zone {
			t.Errorf("Parse(%q, %q).Location() = %s, want %s", tc.spec, tc.tz, got, tc.zone)
		}
		if s.Every() != tc.every {
			t.Errorf("Parse(%q).Every() = %v, want %v", tc.spec, s.Every(), tc.every)
		}
		if tc.every == 0 && s.fixed != tc.fixed {
			t.Errorf("Parse(%q): fixed-time = %v, want %v", tc.spec, s.fixed, tc.fixed)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec, tz string
		want     string // the error message contains this
	}{
		{"61 * * * *", "", `bad spec "61 * * * *": minute 61 out of range 0–59`},
		{"0 10-61 * * *", "", `bad spec "0 10-61 * * *": hour 61 in "10-61" out of range 0–23`},
		{"0 0 9-3 * *", "", `bad spec "0 0 9-3 * *": day-of-month range "9-3" runs backwards (9 to 3)`},
		{"0 25 * * *", "", "hour 25 out of range 0–23"},
		{"0 0 32 * *", "", "day-of-month 32 out of range 1–31"},
		{"0 0 * 13 *", "", "month 13 out of range 1–12"},
		{"0 0 * * 7", "", "day-of-week 7 out of range 0–6"},
		{"60 0 0 * * *", "", "second 60 out of range 0–59"},
		{"*/0 * * * *", "", "minute field: "},
		{"x * * * *", "", "minute field: "},
		{"0 , * * *", "", `hour field ",": matches no value`},
		{"* * * *", "", "expected 5 or 6 fields, found 4"},
		{"* * * * * * *", "", "expected 5 or 6 fields, found 7"},
		{"", "", "empty spec"},
		{"   ", "", "empty spec"},
		{"0 * * * *", "Mars/Base", `unknown time zone "Mars/Base"`},
		{"CRON_TZ=Mars/Base 0 * * * *", "", `unknown time zone "Mars/Base"`},
		{"0 * * * *", "Local", `time zone "Local" is refused`},
		{"TZ=Local 0 * * * *", "UTC", `time zone "Local" is refused`},
		{"CRON_TZ=Europe/Berlin", "", "time zone prefix needs a zone and a spec"},
		{"CRON_TZ= 0 * * * *", "", "time zone prefix needs a zone and a spec"},
		{"TZ=UTC TZ=UTC 0 * * * *", "", "more than one time zone prefix"},
		{"@every 1500ms", "", "@every interval 1.5s: must be a whole number of seconds"},
		{"@every 0s", "", "@every interval 0s: must be at least 1s"},
		{"@every -5s", "", "must be at least 1s"},
		{"@every 5", "", "@every interval: "},
		{"@every", "", "@every takes one interval"},
		{"@every 1s 2s", "", "@every takes one interval"},
		{"@fortnightly", "", `unknown descriptor "@fortnightly"`},
		{"@daily 5", "", "descriptor @daily takes no fields"},
	}
	for _, tc := range tests {
		s, err := Parse(tc.spec, tc.tz)
		if err == nil {
			t.Errorf("Parse(%q, %q) = %v, want an error containing %q", tc.spec, tc.tz, s, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) error = %q, want it to contain %q", tc.spec, tc.tz, err, tc.want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q, %q) error %q does not match ErrInvalid", tc.spec, tc.tz, err)
		}
	}
}

// The cause of a refused zone stays reachable for callers that want it.
func TestParseErrorKeepsCause(t *testing.T) {
	_, err := Parse("0 * * * *", "Mars/Base")
	if errors.Unwrap(err) == nil {
		t.Fatalf("Parse with an unknown zone: %v has no cause", err)
	}
}
