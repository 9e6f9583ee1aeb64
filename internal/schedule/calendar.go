package schedule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"
)

// parseCalendar fills s from the fields of a calendar spec or a descriptor
// other than @every, and classifies it as fixed-time or elapsed-time.
func (s *Schedule) parseCalendar(fs []string) error {
	if strings.HasPrefix(fs[0], "@") {
		if len(fs) != 1 {
			return invalid(s.spec, nil, "descriptor %s takes no fields", fs[0])
		}
		sched, err := parser.Parse(fs[0])
		if err != nil {
			return invalid(s.spec, err, "unknown descriptor %q", fs[0])
		}
		s.setFields(sched)
		s.fixed = fs[0] != "@hourly"
		if s.fixed {
			s.dst, _ = DST{}.normal()
		}
		return nil
	}
	if len(fs) != 5 && len(fs) != 6 {
		return invalid(s.spec, nil, "expected 5 or 6 fields, found %d", len(fs))
	}
	if len(fs) == 5 {
		fs = append([]string{"0"}, fs...)
	}
	plain, kinds, sp, err := s.takeSpecials(fs)
	if err != nil {
		return err
	}
	sched, err := parser.Parse(strings.Join(plain, " "))
	if err != nil {
		return s.blameField(plain, err)
	}
	s.setFields(sched)
	if sp != nil {
		s.f.dom = specialSet(s.f.dom, kinds[3])
		s.f.dow = specialSet(s.f.dow, kinds[5])
		s.f.sp = sp
	}
	for i, set := range s.f.sets() {
		if set&^starBit == 0 && kinds[i] == noSpecial {
			return invalid(s.spec, nil, "%s field %q: matches no value", fieldNames[i], fs[i])
		}
	}
	// The hour field decides how DST is handled: numbers are wall times
	// that fire once a local day; "*" or a step follows elapsed time.
	s.fixed = !strings.ContainsAny(fs[2], "*?/")
	if s.fixed {
		s.dst, _ = DST{}.normal()
	}
	return nil
}

// Kinds of a day field in a spec with specials.
const (
	noSpecial    = iota // plain values only, as the parser reads them
	mixedSpecial        // plain values and specials
	onlySpecial         // specials alone: the parser reads a stand-in "1"
)

// takeSpecials takes the day specials out of the six fields fs: it returns
// the fields for the parser, the kind of each field, and the specials, nil
// if there are none.
func (s *Schedule) takeSpecials(fs []string) ([]string, [6]int, *daySpecials, error) {
	plain := slices.Clone(fs)
	var kinds [6]int
	var sp daySpecials
	for i, field := range fs {
		rest, err := splitSpecials(i, field, &sp)
		if err != nil {
			return nil, kinds, nil, invalid(s.spec, nil, "%v", err)
		}
		switch {
		case rest == "":
			rest, kinds[i] = "1", onlySpecial
		case rest != field:
			kinds[i] = mixedSpecial
		}
		plain[i] = rest
	}
	if !sp.hasDom() && !sp.hasDow() {
		return plain, kinds, nil, nil
	}
	return plain, kinds, &sp, nil
}

// specialSet returns the bit set of a day field of the given kind, for the
// cron day rule: a field with a special is never "*", and one of specials
// alone has no plain value.
func specialSet(set uint64, kind int) uint64 {
	switch kind {
	case onlySpecial:
		return 0
	case mixedSpecial:
		return set &^ starBit
	}
	return set
}

// setFields copies the bit sets of a parsed calendar spec.
func (s *Schedule) setFields(sched cron.Schedule) {
	spec := sched.(*cron.SpecSchedule)
	s.f = fields{second: spec.Second, minute: spec.Minute, hour: spec.Hour, dom: spec.Dom, month: spec.Month, dow: spec.Dow}
}

// sets returns the six bit sets in spec order, seconds first.
func (f *fields) sets() [6]uint64 {
	return [6]uint64{f.second, f.minute, f.hour, f.dom, f.month, f.dow}
}

// blameField turns the parser's error for the six fields fs into one naming
// the field at fault, found by parsing each field alone among defaults.
func (s *Schedule) blameField(fs []string, err error) error {
	for i, field := range fs {
		probe := []string{"0", "0", "0", "*", "*", "*"}
		probe[i] = field
		if _, ferr := parser.Parse(strings.Join(probe, " ")); ferr != nil {
			return invalid(s.spec, ferr, "%s", plainField(i, ferr))
		}
	}
	return invalid(s.spec, err, "%v", err)
}

// fieldBounds are the least and greatest value of each field, in the order
// of fieldNames.
var fieldBounds = [6][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}

// parserRange matches the parser's words for a value out of its field's
// range, and for a range that runs backwards.
var parserRange = regexp.MustCompile(`^(beginning of range|end of range) \((-?\d+)\) (below minimum|above maximum|beyond end of range) \((-?\d+)\): (.*)$`)

// plainField words the parser's complaint about field i: "minute 61 out of
// range 0–59" rather than "end of range (61) above maximum (59): 61".
func plainField(i int, err error) string {
	name, lo, hi := fieldNames[i], fieldBounds[i][0], fieldBounds[i][1]
	m := parserRange.FindStringSubmatch(err.Error())
	switch {
	case m == nil:
		return fmt.Sprintf("%s field: %v", name, err)
	case m[3] == "beyond end of range":
		return fmt.Sprintf("%s range %q runs backwards (%s to %s)", name, m[5], m[2], m[4])
	case m[5] == m[2]:
		return fmt.Sprintf("%s %s out of range %d–%d", name, m[2], lo, hi)
	}
	return fmt.Sprintf("%s %s in %q out of range %d–%d", name, m[2], m[5], lo, hi)
}
