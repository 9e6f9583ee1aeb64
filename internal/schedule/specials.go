package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// daySpecials holds the day specials of a spec, those the parser's bit sets
// cannot express: each depends on the month's length or on which week of
// the month a day falls in, so it is checked day by day.
type daySpecials struct {
	// Day-of-month. lastOff has bit n for "L-n" (bit 0 for "L"): the day n
	// days before the month's last. nearest has bit n for "nW". lastWeekday
	// is "LW".
	lastOff, nearest uint32
	lastWeekday      bool
	// Day-of-week. nth[d] has bit n for "d#n"; last has bit d for "dL".
	nth  [7]uint8
	last uint8
}

// hasDom reports whether the day-of-month field has a special.
func (d *daySpecials) hasDom() bool { return d.lastOff != 0 || d.nearest != 0 || d.lastWeekday }

// hasDow reports whether the day-of-week field has a special.
func (d *daySpecials) hasDow() bool { return d.nth != [7]uint8{} || d.last != 0 }

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// domMatches reports whether the day of w matches a day-of-month special.
func (d *daySpecials) domMatches(w time.Time) bool {
	y, m, day := w.Date()
	last := daysIn(y, m)
	if off := last - day; off <= 30 && d.lastOff&(1<<uint(off)) != 0 {
		return true
	}
	wd := w.Weekday()
	if wd == time.Saturday || wd == time.Sunday {
		return false
	}
	if d.lastWeekday && day == lastWeekdayOf(last, wd, day) {
		return true
	}
	return d.nearest != 0 && d.nearestTo(day, last, wd)
}

// lastWeekdayOf returns the last Monday-to-Friday day of a month of last
// days, given the weekday wd of its day day.
func lastWeekdayOf(last int, wd time.Weekday, day int) int {
	lastWd := (int(wd) + last - day) % 7
	switch time.Weekday(lastWd) {
	case time.Saturday:
		return last - 1
	case time.Sunday:
		return last - 2
	}
	return last
}

// nearestTo reports whether day, a weekday wd of a month of last days, is
// the weekday nearest some day n with "nW" set: n itself; the Saturday
// after a Friday or the Sunday before a Monday; the 1st when a Saturday
// (its Monday is the 3rd) and the last day when a Sunday (its Friday is
// two days before), so as never to leave the month.
func (d *daySpecials) nearestTo(day, last int, wd time.Weekday) bool {
	has := func(n int) bool { return n >= 1 && n <= last && d.nearest&(1<<uint(n)) != 0 }
	switch {
	case has(day):
		return true
	case wd == time.Friday:
		return has(day+1) || day+2 == last && has(last)
	case wd == time.Monday:
		return has(day-1) || day == 3 && has(1)
	}
	return false
}

// dowMatches reports whether the day of w matches a day-of-week special.
func (d *daySpecials) dowMatches(w time.Time) bool {
	y, m, day := w.Date()
	wd := w.Weekday()
	if d.nth[wd]&(1<<uint((day-1)/7+1)) != 0 {
		return true
	}
	return d.last&(1<<uint(wd)) != 0 && day+7 > daysIn(y, m)
}

// splitSpecials takes the specials out of field i (day-of-month, 3, or
// day-of-week, 5) into d, and returns the rest for the parser, "" if
// nothing is left. Specials in any other field are refused.
func splitSpecials(i int, field string, d *daySpecials) (string, error) {
	parts := strings.Split(field, ",")
	var plain []string
	for _, part := range parts {
		up := strings.ToUpper(part)
		var ok bool
		var err error
		switch i {
		case 3:
			ok, err = d.addDom(up)
		case 5:
			ok, err = d.addDow(up)
		default:
			if looksSpecial(up) {
				err = fmt.Errorf("%s is only allowed in day-of-month or day-of-week", part)
			}
		}
		if err != nil {
			return "", fmt.Errorf("%s field %q: %w", fieldNames[i], part, err)
		}
		if !ok {
			plain = append(plain, part)
		}
	}
	if len(plain) < len(parts) && slices.Contains(plain, "") {
		return "", fmt.Errorf("%s field %q: empty item in the list", fieldNames[i], field)
	}
	return strings.Join(plain, ","), nil
}

// looksSpecial reports whether an upper-cased part of a field is written as
// a day special.
func looksSpecial(up string) bool {
	if strings.Contains(up, "#") || up == "L" || up == "LW" || strings.HasPrefix(up, "L-") {
		return true
	}
	n := len(up)
	if n < 2 || up[n-1] != 'W' && up[n-1] != 'L' {
		return false
	}
	_, err := dayOfWeek(up[:n-1])
	return err == nil || strings.Trim(up[:n-1], "0123456789") == ""
}

// addDom records the day-of-month special up (upper-cased), if it is one:
// "L", "L-n", "LW" or "nW".
func (d *daySpecials) addDom(up string) (bool, error) {
	switch {
	case strings.Contains(up, "#"):
		return false, fmt.Errorf("# belongs in day-of-week, e.g. \"MON#2\"")
	case up == "L":
		d.lastOff |= 1
	case up == "LW":
		d.lastWeekday = true
	case strings.HasPrefix(up, "L-"):
		n, err := strconv.Atoi(up[2:])
		if err != nil {
			return false, fmt.Errorf("offset %q after L- is not a number", up[2:])
		}
		if n < 1 || n > 30 {
			return false, fmt.Errorf("offset %d out of range 1–30", n)
		}
		d.lastOff |= 1 << uint(n)
	case up == "W":
		return false, afterField("W needs a day before it, e.g. \"15W\"")
	case strings.HasSuffix(up, "W"):
		n, err := strconv.Atoi(up[:len(up)-1])
		if err != nil {
			return false, fmt.Errorf("%q before W is not a day of the month", up[:len(up)-1])
		}
		if n < 1 || n > 31 {
			return false, fmt.Errorf("day %d out of range 1–31", n)
		}
		d.nearest |= 1 << uint(n)
	case strings.Contains(up, "L"):
		return false, fmt.Errorf("not a day-of-month special: L, L-n (n 1–30), LW or nW (n 1–31); the last given weekday is \"5L\" in day-of-week")
	case strings.Contains(up, "W"):
		return false, fmt.Errorf("not a day-of-month special: W goes after a day, e.g. \"15W\"")
	default:
		return false, nil
	}
	return true, nil
}

// addDow records the day-of-week special up (upper-cased), if it is one:
// "D#n" or "DL".
func (d *daySpecials) addDow(up string) (bool, error) {
	if day, occ, found := strings.Cut(up, "#"); found {
		wd, err := dayOfWeek(day)
		if err != nil {
			return false, err
		}
		n, err := strconv.Atoi(occ)
		if err != nil {
			return false, fmt.Errorf("occurrence %q after # is not a number", occ)
		}
		if n < 1 || n > 5 {
			return false, fmt.Errorf("occurrence %d out of range 1–5", n)
		}
		d.nth[wd] |= 1 << uint(n)
		return true, nil
	}
	switch {
	case up == "L":
		return false, afterField("L needs a day before it in day-of-week, e.g. \"5L\"")
	case up == "LW" || up == "W" || strings.HasPrefix(up, "L-") ||
		strings.HasSuffix(up, "W") && strings.Trim(up[:len(up)-1], "0123456789") == "":
		return false, fmt.Errorf("%s belongs in day-of-month, e.g. \"15W\", \"LW\" or \"L-3\"", up)
	case strings.HasSuffix(up, "L"):
		wd, err := dayOfWeek(up[:len(up)-1])
		if err != nil {
			return false, err
		}
		d.last |= 1 << uint(wd)
		return true, nil
	}
	return false, nil
}

// afterField returns an error whose message follows a field's name, as
// splitSpecials words it, and so may start with a special's capital letter.
func afterField(msg string) error { return errors.New(msg) }

// weekdayNames are the day-of-week names, Sunday first.
var weekdayNames = [7]string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

// dayOfWeek reads the day before "#" or "L" in day-of-week: 0–7 (0 and 7
// are Sunday) or a name, upper-cased.
func dayOfWeek(up string) (time.Weekday, error) {
	for i, name := range weekdayNames {
		if up == name {
			return time.Weekday(i), nil
		}
	}
	n, err := strconv.Atoi(up)
	if err != nil || n < 0 || n > 7 || up == "" || up[0] == '+' || up[0] == '-' {
		return 0, fmt.Errorf("day %q is not 0–7 or SUN–SAT", up)
	}
	return time.Weekday(n % 7), nil
}
