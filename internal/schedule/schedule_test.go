package schedule

import (
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the tests must not depend on the host's zone files
)

// 2026 transitions used below (tz data, checked with time.ZoneBounds):
//
//	Europe/Berlin        2026-03-29 01:00Z  02:00 CET  -> 03:00 CEST  (gap 02:00-02:59)
//	                     2026-10-25 01:00Z  03:00 CEST -> 02:00 CET   (02:00-02:59 twice)
//	America/New_York     2026-03-08 07:00Z  02:00 EST  -> 03:00 EDT   (gap 02:00-02:59)
//	                     2026-11-01 06:00Z  02:00 EDT  -> 01:00 EST   (01:00-01:59 twice)
//	Australia/Lord_Howe  2026-04-04 15:00Z  02:00 +11   -> 01:30 +1030 (01:30-01:59 twice)
//	                     2026-10-03 15:30Z  02:00 +1030 -> 02:30 +11   (gap 02:00-02:29)
//	America/Santiago     2026-04-05 03:00Z  24:00 -03 -> 23:00 -04 on 04-04 (23:00-23:59 twice)
//	                     2026-09-06 04:00Z  00:00 -04 -> 01:00 -03 on 09-06 (gap 00:00-00:59)

// dstCases lists every slot of a schedule in [from, to), around a transition.
// The comments give the local wall time of each slot.
var dstCases = []struct {
	name, spec, tz string
	from, to       string
	want           []string
}{
	{"berlin spring fixed 02:30", "30 2 * * *", "Europe/Berlin", "2026-03-27T00:00:00Z", "2026-04-01T00:00:00Z", []string{
		"2026-03-27T01:30:00Z", "2026-03-28T01:30:00Z", // 02:30 CET
		"2026-03-29T01:00:00Z",                         // 02:30 does not exist: the gap ends at 03:00 CEST
		"2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", // 02:30 CEST
	}},
	{"berlin autumn fixed 02:30", "30 2 * * *", "Europe/Berlin", "2026-10-23T00:00:00Z", "2026-10-28T00:00:00Z", []string{
		"2026-10-23T00:30:00Z", "2026-10-24T00:30:00Z", // 02:30 CEST
		"2026-10-25T00:30:00Z",                         // first 02:30 (CEST) only, not 01:30Z
		"2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", // 02:30 CET
	}},
	{"berlin spring fixed 02:00", "0 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z", []string{
		"2026-03-28T01:00:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z",
	}},
	{"berlin spring two gap times one slot", "0,30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-30T12:00:00Z", []string{
		"2026-03-29T01:00:00Z", // 02:00 and 02:30 both become 03:00 CEST
		"2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z",
	}},
	{"berlin autumn hourly", "0 * * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T03:00:00Z", []string{
		"2026-10-24T22:00:00Z", "2026-10-24T23:00:00Z", // 00:00, 01:00 CEST
		"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", // 02:00 CEST, 02:00 CET
		"2026-10-25T02:00:00Z", // 03:00 CET
	}},
	{"berlin spring @hourly", "@hourly", "Europe/Berlin", "2026-03-28T22:00:00Z", "2026-03-29T03:00:00Z", []string{
		"2026-03-28T22:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T00:00:00Z", // 23:00, 00:00, 01:00 CET
		"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", // 03:00, 04:00 CEST
	}},
	{"berlin autumn every 30 min", "*/30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", []string{
		"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", // 02:00, 02:30 CEST
		"2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", // 02:00, 02:30 CET
	}},
	{"new york spring fixed 02:30", "30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z", []string{
		"2026-03-07T07:30:00Z", // 02:30 EST
		"2026-03-08T07:00:00Z", // gap: 03:00 EDT
		"2026-03-09T06:30:00Z", // 02:30 EDT
	}},
	{"new york autumn fixed 01:30", "30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z", "2026-11-03T00:00:00Z", []string{
		"2026-10-31T05:30:00Z", // 01:30 EDT
		"2026-11-01T05:30:00Z", // first 01:30 (EDT) only, not 06:30Z
		"2026-11-02T06:30:00Z", // 01:30 EST
	}},
	{"new york spring every 30 min", "*/30 * * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T09:00:00Z", []string{
		"2026-03-08T05:00:00Z", "2026-03-08T05:30:00Z", "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", // 00:00-01:30 EST
		"2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z", "2026-03-08T08:30:00Z", // 03:00-04:30 EDT
	}},
	{"new york autumn every 30 min", "*/30 * * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z", []string{
		"2026-11-01T04:00:00Z", "2026-11-01T04:30:00Z", // 00:00, 00:30 EDT
		"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", // 01:00, 01:30 EDT
		"2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", // 01:00, 01:30 EST
		"2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z", // 02:00, 02:30 EST
	}},
	{"new york spring every 2 hours", "0 */2 * * *", "America/New_York", "2026-03-08T04:00:00Z", "2026-03-08T12:00:00Z", []string{
		"2026-03-08T05:00:00Z",                         // 00:00 EST; 02:00 does not exist
		"2026-03-08T08:00:00Z", "2026-03-08T10:00:00Z", // 04:00, 06:00 EDT
	}},
	{"new york autumn every 2 hours", "0 */2 * * *", "America/New_York", "2026-11-01T03:00:00Z", "2026-11-01T12:00:00Z", []string{
		"2026-11-01T04:00:00Z", // 00:00 EDT
		"2026-11-01T07:00:00Z", // 02:00 EST
		"2026-11-01T09:00:00Z", "2026-11-01T11:00:00Z",
	}},
	{"lord howe spring fixed 02:00", "0 2 * * *", "Australia/Lord_Howe", "2026-10-01T12:00:00Z", "2026-10-05T12:00:00Z", []string{
		"2026-10-01T15:30:00Z", "2026-10-02T15:30:00Z", // 02:00 +1030
		"2026-10-03T15:30:00Z", // gap: 02:30 +11
		"2026-10-04T15:00:00Z", // 02:00 +11
	}},
	{"lord howe spring three gap times one slot", "0,15,30 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z", "2026-10-04T16:00:00Z", []string{
		"2026-10-03T15:30:00Z", // 02:00, 02:15 (gap) and 02:30 +11
		"2026-10-04T15:00:00Z", "2026-10-04T15:15:00Z", "2026-10-04T15:30:00Z",
	}},
	{"lord howe autumn fixed 01:45", "45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:00:00Z", "2026-04-06T00:00:00Z", []string{
		"2026-04-03T14:45:00Z", // 01:45 +11
		"2026-04-04T14:45:00Z", // first 01:45 (+11) only, not 15:15Z
		"2026-04-05T15:15:00Z", // 01:45 +1030
	}},
	{"lord howe autumn every 30 min", "*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", "2026-04-04T16:00:00Z", []string{
		"2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", // 01:00, 01:30 +11
		"2026-04-04T15:00:00Z", "2026-04-04T15:30:00Z", // 01:30, 02:00 +1030
	}},
	{"lord howe spring hourly", "0 * * * *", "Australia/Lord_Howe", "2026-10-03T14:00:00Z", "2026-10-03T17:00:00Z", []string{
		"2026-10-03T14:30:00Z", // 01:00 +1030; 02:00 does not exist
		"2026-10-03T16:00:00Z", // 03:00 +11
	}},
	{"lord howe autumn hourly", "0 * * * *", "Australia/Lord_Howe", "2026-04-04T13:00:00Z", "2026-04-04T17:00:00Z", []string{
		"2026-04-04T13:00:00Z", "2026-04-04T14:00:00Z", // 00:00, 01:00 +11
		"2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z", // 02:00, 03:00 +1030
	}},
	{"santiago spring midnight", "0 0 * * *", "America/Santiago", "2026-09-04T00:00:00Z", "2026-09-08T00:00:00Z", []string{
		"2026-09-04T04:00:00Z", "2026-09-05T04:00:00Z", // 00:00 -04
		"2026-09-06T04:00:00Z", // midnight does not exist: 01:00 -03
		"2026-09-07T03:00:00Z", // 00:00 -03
	}},
	{"santiago spring @daily", "@daily", "America/Santiago", "2026-09-05T12:00:00Z", "2026-09-07T12:00:00Z", []string{
		"2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z",
	}},
	{"santiago autumn midnight", "0 0 * * *", "America/Santiago", "2026-04-03T12:00:00Z", "2026-04-06T12:00:00Z", []string{
		"2026-04-04T03:00:00Z",                         // 00:00 -03
		"2026-04-05T04:00:00Z", "2026-04-06T04:00:00Z", // 00:00 -04
	}},
	{"santiago autumn fixed 23:30", "30 23 * * *", "America/Santiago", "2026-04-04T00:00:00Z", "2026-04-07T00:00:00Z", []string{
		"2026-04-04T02:30:00Z", // 04-03 23:30 -03
		"2026-04-05T02:30:00Z", // first 04-04 23:30 (-03) only, not 03:30Z
		"2026-04-06T03:30:00Z", // 04-05 23:30 -04
	}},
	{"santiago autumn every 30 min", "*/30 * * * *", "America/Santiago", "2026-04-05T02:00:00Z", "2026-04-05T04:00:00Z", []string{
		"2026-04-05T02:00:00Z", "2026-04-05T02:30:00Z", // 23:00, 23:30 -03
		"2026-04-05T03:00:00Z", "2026-04-05T03:30:00Z", // 23:00, 23:30 -04
	}},
	{"santiago spring every 2 hours", "0 */2 * * *", "America/Santiago", "2026-09-06T02:00:00Z", "2026-09-06T08:00:00Z", []string{
		"2026-09-06T02:00:00Z",                         // 09-05 22:00 -04; 00:00 does not exist
		"2026-09-06T05:00:00Z", "2026-09-06T07:00:00Z", // 02:00, 04:00 -03
	}},
}

func TestNextAcrossTransitions(t *testing.T) {
	for _, tc := range dstCases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.spec, tc.tz)
			got := slotsBetween(s, mustTime(t, tc.from), mustTime(t, tc.to))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s in %s, slots in [%s, %s):\n got %v\nwant %v", tc.spec, tc.tz, tc.from, tc.to, got, tc.want)
			}
		})
	}
}

func TestPrevAcrossTransitions(t *testing.T) {
	for _, tc := range dstCases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.spec, tc.tz)
			var got []string
			for x := s.Prev(mustTime(t, tc.to).Add(-time.Second)); !x.Before(mustTime(t, tc.from)); x = s.Prev(x.Add(-time.Second)) {
				got = append(got, x.Format(time.RFC3339))
			}
			slices.Reverse(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s in %s, slots in [%s, %s) walking back:\n got %v\nwant %v", tc.spec, tc.tz, tc.from, tc.to, got, tc.want)
			}
		})
	}
}

// slotsBetween walks Next from just before from, and returns the slots
// before to in RFC 3339.
func slotsBetween(s *Schedule, from, to time.Time) []string {
	var out []string
	for x := s.Next(from.Add(-time.Second)); !x.IsZero() && x.Before(to); x = s.Next(x) {
		out = append(out, x.Format(time.RFC3339))
	}
	return out
}

func mustParse(t testing.TB, spec, tz string) *Schedule {
	t.Helper()
	s, err := Parse(spec, tz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustTime(t testing.TB, text string) time.Time {
	t.Helper()
	x, err := time.Parse(time.RFC3339, text)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
