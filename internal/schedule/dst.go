package schedule

// Gap says what a fixed-time schedule does with a wall time that a
// spring-forward gap skips.
type Gap string

// The gap rules.
const (
	GapShift Gap = "shift" // fire when the gap ends (the default)
	GapSkip  Gap = "skip"  // no slot for that wall time that day
)

// Repeat says what a fixed-time schedule does with a wall time that a fall
// back shows twice.
type Repeat string

// The repeat rules.
const (
	RepeatFirst Repeat = "first" // fire at its first occurrence only (the default)
	RepeatBoth  Repeat = "both"  // fire at both occurrences
)

// DST is how a fixed-time schedule treats the wall times a clock change
// skips or repeats. The zero value is the default: GapShift, RepeatFirst.
type DST struct {
	Gap    Gap
	Repeat Repeat
}

// normal returns d with its empty parts set to the defaults, and whether
// every part is known.
func (d DST) normal() (DST, bool) {
	if d.Gap == "" {
		d.Gap = GapShift
	}
	if d.Repeat == "" {
		d.Repeat = RepeatFirst
	}
	ok := (d.Gap == GapShift || d.Gap == GapSkip) && (d.Repeat == RepeatFirst || d.Repeat == RepeatBoth)
	return d, ok
}

// isDefault reports whether d, normalised, is the default rule.
func (d DST) isDefault() bool { return d.Gap == GapShift && d.Repeat == RepeatFirst }

// WithDST returns a copy of s that treats skipped and repeated wall times
// as d says. An unknown rule is refused, and so is any but the default for
// a schedule that is not fixed-time: elapsed-time and "@every" schedules
// follow real time, so no wall time of theirs is shifted or held back.
// Errors match ErrInvalid.
func (s *Schedule) WithDST(d DST) (*Schedule, error) {
	n, ok := d.normal()
	switch {
	case !ok:
		return nil, invalid(s.spec, nil, "unknown DST rule gap=%q repeat=%q: gap is %q or %q, repeat %q or %q",
			d.Gap, d.Repeat, GapShift, GapSkip, RepeatFirst, RepeatBoth)
	case !s.Fixed() && !n.isDefault():
		return nil, invalid(s.spec, nil, "DST rule gap=%s repeat=%s applies to fixed-time schedules only: this one follows real time (its hour field is \"*\" or a step, or it is @hourly or @every)",
			n.Gap, n.Repeat)
	}
	c := *s
	c.dst = DST{}
	if s.Fixed() {
		c.dst = n
	}
	return &c, nil
}

// DST returns the rule a fixed-time schedule follows for skipped and
// repeated wall times, its parts spelled out; the zero DST for the others,
// which follow real time.
func (s *Schedule) DST() DST { return s.dst }

// Fixed reports whether s is a fixed-time schedule: a calendar spec whose
// hour field is numbers (or a descriptor other than @hourly), the kind a
// DST rule applies to.
func (s *Schedule) Fixed() bool { return s.fixed && s.every == 0 }
