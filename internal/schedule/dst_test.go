package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	shiftFirst = DST{}
	skipFirst  = DST{Gap: GapSkip}
	shiftBoth  = DST{Repeat: RepeatBoth}
	skipBoth   = DST{Gap: GapSkip, Repeat: RepeatBoth}
	dstRules   = []DST{shiftFirst, skipFirst, shiftBoth, skipBoth}
)

// mustDST parses spec in tz and sets its DST rule.
func mustDST(t testing.TB, spec, tz string, d DST) *Schedule {
	t.Helper()
	s, err := mustParse(t, spec, tz).WithDST(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The slots of fixed-time schedules around the 2026 transitions under each
// DST rule. The comments give the local wall times.
var dstRuleCases = []struct {
	spec, tz string
	rule     DST
	from, to string
	want     []string
}{
	// Europe/Berlin, 2026-03-29: 02:00–02:59 do not exist.
	{"0 30 2 * * *", "Europe/Berlin", shiftFirst, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z", []string{
		"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}}, // 03:00 CEST, gap end
	{"0 30 2 * * *", "Europe/Berlin", skipFirst, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z", []string{
		"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"}}, // none on the 29th
	{"0 30 2 * * *", "Europe/Berlin", skipBoth, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z", []string{
		"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"}},
	{"0 30 2 * * *", "Europe/Berlin", shiftBoth, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z", []string{
		"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
	// A wall time that is the gap's end fires on that day under GapSkip.
	{"0 30 2,3 * * *", "Europe/Berlin", skipFirst, "2026-03-29T00:00:00Z", "2026-03-29T03:00:00Z", []string{
		"2026-03-29T01:30:00Z"}}, // 03:30 CEST only
	{"0 0,30 2,3 * * *", "Europe/Berlin", skipFirst, "2026-03-29T00:00:00Z", "2026-03-29T03:00:00Z", []string{
		"2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}}, // 03:00, 03:30 CEST
	// Europe/Berlin, 2026-10-25: 02:00–02:59 happen twice.
	{"0 30 2 * * *", "Europe/Berlin", shiftFirst, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z", []string{
		"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
	{"0 30 2 * * *", "Europe/Berlin", skipFirst, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z", []string{
		"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
	{"0 30 2 * * *", "Europe/Berlin", shiftBoth, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z", []string{
		"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"}}, // CEST, CET
	{"0 30 2 * * *", "Europe/Berlin", skipBoth, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z", []string{
		"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"}},
	// America/New_York: gap 02:00–02:59 on 03-08, 01:00–01:59 twice on 11-01.
	{"0,30 2 * * *", "America/New_York", shiftBoth, "2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z", []string{
		"2026-03-08T07:00:00Z"}}, // both become 03:00 EDT: one slot
	{"0,30 2 * * *", "America/New_York", skipBoth, "2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z", nil},
	{"30 1 * * *", "America/New_York", shiftBoth, "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z", []string{
		"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"}}, // 01:30 EDT, 01:30 EST
	// Australia/Lord_Howe: gap 02:00–02:29 on 10-04, 01:30–01:59 twice on 04-05.
	{"0,15,30 2 * * *", "Australia/Lord_Howe", skipFirst, "2026-10-03T12:00:00Z", "2026-10-03T18:00:00Z", []string{
		"2026-10-03T15:30:00Z"}}, // 02:30 +11 only
	{"45 1 * * *", "Australia/Lord_Howe", shiftBoth, "2026-04-04T12:00:00Z", "2026-04-04T18:00:00Z", []string{
		"2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z"}}, // 01:45 +11, 01:45 +1030
	// America/Santiago: midnight does not exist on 09-06.
	{"@daily", "America/Santiago", skipFirst, "2026-09-05T00:00:00Z", "2026-09-08T00:00:00Z", []string{
		"2026-09-05T04:00:00Z", "2026-09-07T03:00:00Z"}},
}

func TestDSTRules(t *testing.T) {
	for _, tc := range dstRuleCases {
		s := mustDST(t, tc.spec, tc.tz, tc.rule)
		from, to := mustTime(t, tc.from), mustTime(t, tc.to)
		if got := slotsBetween(s, from, to); !slices.Equal(got, tc.want) {
			t.Errorf("%s in %s, %+v, Next:\n got %v\nwant %v", tc.spec, tc.tz, tc.rule, got, tc.want)
		}
		var back []string
		for x := s.Prev(to.Add(-time.Second)); !x.IsZero() && !x.Before(from); x = s.Prev(x.Add(-time.Second)) {
			back = append(back, x.Format(time.RFC3339))
		}
		slices.Reverse(back)
		if !slices.Equal(back, tc.want) {
			t.Errorf("%s in %s, %+v, Prev:\n got %v\nwant %v", tc.spec, tc.tz, tc.rule, back, tc.want)
		}
	}
}

// Each DST rule agrees with a brute-force reading of it, minute by minute
// around every transition: a wall time fires at a real minute when the
// clock shows it (GapSkip) or first reaches it (GapShift), and again when
// the clock shows it after going back (RepeatBoth).
func TestDSTRulesAgainstBruteForce(t *testing.T) {
	specs := []string{"30 2 * * *", "0,30 2 * * *", "*/15 1-3 * * *", "45 23 * * *", "0 0 * * *", "59 1 * * 0", "@weekly", "30 1 L * *"}
	for tz, days := range transitionDays {
		for _, day := range days {
			for _, spec := range specs {
				for _, rule := range dstRules {
					s := mustDST(t, spec, tz, rule)
					from, to := day.Add(-36*time.Hour), day.Add(36*time.Hour)
					got := slotsBetween(s, from, to)
					if want := bruteDST(s, from, to); !slices.Equal(got, want) {
						t.Errorf("%s in %s near %s, %+v:\n got %v\nwant %v", spec, tz, day.Format(time.DateOnly), rule, got, want)
					}
				}
			}
		}
	}
}

// bruteDST returns the slots of s in [from, to), found minute by minute.
func bruteDST(s *Schedule, from, to time.Time) []string {
	var out []string
	high := naiveWall(from.Add(-time.Minute), s.loc) // no transition within a day of from
	for x := from; x.Before(to); x = x.Add(time.Minute) {
		w := naiveWall(x, s.loc)
		fire := false
		if s.dst.Repeat == RepeatBoth || w.After(high) {
			fire = naiveDayMatch(s, w) // the clock shows a matching wall time
		}
		if s.dst.Gap == GapShift {
			for c := high.Add(time.Minute); !c.After(w); c = c.Add(time.Minute) {
				fire = fire || naiveDayMatch(s, c) // first reaches one
			}
		}
		if fire {
			out = append(out, x.Format(time.RFC3339))
		}
		if w.After(high) {
			high = w
		}
	}
	return out
}

// naiveDayMatch is naiveMatch that also knows "L" in day-of-month, the
// only special of the specs above: the last day, and the other fields.
func naiveDayMatch(s *Schedule, w time.Time) bool {
	if s.f.sp != nil {
		c := *s
		c.f.dom = ^uint64(0)
		return w.AddDate(0, 0, 1).Day() == 1 && naiveMatch(&c, w)
	}
	return naiveMatch(s, w)
}

func TestWithDST(t *testing.T) {
	s := mustParse(t, "30 2 * * *", "Europe/Berlin")
	if !s.Fixed() || s.DST() != (DST{Gap: GapShift, Repeat: RepeatFirst}) {
		t.Errorf("fixed-time: Fixed() = %v, DST() = %+v, want true and the default spelled out", s.Fixed(), s.DST())
	}
	b := mustDST(t, "30 2 * * *", "Europe/Berlin", skipBoth)
	if b.DST() != skipBoth {
		t.Errorf("DST() = %+v, want %+v", b.DST(), skipBoth)
	}
	if w := b.Within(date(2026, 1, 1), time.Time{}); w.DST() != skipBoth {
		t.Errorf("Within dropped the DST rule: %+v", w.DST())
	}
	if s.DST() != (DST{Gap: GapShift, Repeat: RepeatFirst}) {
		t.Errorf("WithDST changed the schedule it copied: %+v", s.DST())
	}
	for _, spec := range []string{"30 * * * *", "@hourly", "@every 1h", "0 */2 * * *"} {
		e := mustParse(t, spec, "Europe/Berlin")
		if e.Fixed() || e.DST() != (DST{}) {
			t.Errorf("%s: Fixed() = %v, DST() = %+v, want false and the zero DST", spec, e.Fixed(), e.DST())
		}
		if _, err := e.WithDST(DST{Gap: GapShift, Repeat: RepeatFirst}); err != nil {
			t.Errorf("%s: the default rule refused: %v", spec, err)
		}
		_, err := e.WithDST(skipFirst)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fixed-time schedules only") {
			t.Errorf("%s: WithDST(skip) error %v, want ErrInvalid saying it follows real time", spec, err)
		}
	}
	for _, d := range []DST{{Gap: "later"}, {Repeat: "last"}, {Gap: "Skip"}} {
		if _, err := s.WithDST(d); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unknown DST rule") {
			t.Errorf("WithDST(%+v) error %v, want ErrInvalid naming the rule", d, err)
		}
	}
}
