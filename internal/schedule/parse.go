package schedule

import (
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// parser reads calendar specs: 5 fields, or 6 with leading seconds, and
// descriptors. Only its bit sets are used, never its Next.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// fieldNames names the six fields of a spec with seconds, in order.
var fieldNames = [6]string{"second", "minute", "hour", "day-of-month", "month", "day-of-week"}

// Parse parses spec in time zone tz.
//
// spec has 5 fields (minute hour day-of-month month day-of-week), or 6 with
// a leading seconds field; or is a descriptor: @yearly (@annually),
// @monthly, @weekly, @daily (@midnight), @hourly, or "@every D" where D is a
// Go duration of a whole number of seconds, at least 1s. A "CRON_TZ=Zone "
// or "TZ=Zone " prefix overrides tz. The day fields also take the specials
// "L", "L-n", "nW" and "LW" (day-of-month), "D#n" and "DL" (day-of-week);
// see the package documentation.
//
// tz is an IANA zone name; "" means UTC. "Local" is refused: every replica
// must compute the same slots, whatever zone its host is set to.
//
// Errors match ErrInvalid and say which part of the input is wrong.
func Parse(spec, tz string) (*Schedule, error) {
	text := strings.TrimSpace(spec)
	if text == "" {
		return nil, invalid(spec, nil, "empty spec")
	}
	if name, rest, ok := cutZonePrefix(text); ok {
		if name == "" || rest == "" {
			return nil, invalid(spec, nil, "time zone prefix needs a zone and a spec, e.g. \"CRON_TZ=Europe/Berlin 0 2 * * *\"")
		}
		if _, _, again := cutZonePrefix(rest); again {
			return nil, invalid(spec, nil, "more than one time zone prefix")
		}
		tz, text = name, rest
	}
	loc, err := loadZone(spec, tz)
	if err != nil {
		return nil, err
	}
	s := &Schedule{spec: spec, loc: loc}
	fs := strings.Fields(text)
	if fs[0] == "@every" {
		if len(fs) != 2 {
			return nil, invalid(spec, nil, "@every takes one interval, e.g. \"@every 30s\"")
		}
		if s.every, err = parseEvery(fs[1]); err != nil {
			return nil, invalid(spec, err, "%v", err)
		}
		return s, nil
	}
	if err := s.parseCalendar(fs); err != nil {
		return nil, err
	}
	return s, nil
}

// cutZonePrefix splits "CRON_TZ=Zone rest" or "TZ=Zone rest" into the zone
// and the rest.
func cutZonePrefix(text string) (name, rest string, ok bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if after, found := strings.CutPrefix(text, p); found {
			name = after
			if i := strings.IndexFunc(after, unicode.IsSpace); i >= 0 {
				name, rest = after[:i], after[i:]
			}
			return name, strings.TrimSpace(rest), true
		}
	}
	return "", "", false
}

// loadZone returns the location named tz ("" is UTC).
func loadZone(spec, tz string) (*time.Location, error) {
	switch tz {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, invalid(spec, nil, "time zone \"Local\" is refused: replicas must agree on the zone, so name it (e.g. \"Europe/Berlin\")")
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, invalid(spec, err, "unknown time zone %q", tz)
	}
	return loc, nil
}
