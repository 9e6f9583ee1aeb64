package schedule_test

import (
	"fmt"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
)

// A fixed-time schedule fires once every local day, even on the days the
// clocks change: on the spring-forward day 02:30 does not exist and the slot
// is at 03:00 CEST, the end of the gap; on the fall-back day 02:30 happens
// twice and the slot is the first one.
func ExampleSchedule_Next() {
	s, err := schedule.Parse("30 2 * * *", "Europe/Berlin")
	if err != nil {
		panic(err)
	}
	for _, from := range []string{"2026-03-28T12:00:00Z", "2026-10-24T12:00:00Z"} {
		x, _ := time.Parse(time.RFC3339, from)
		for range 3 {
			x = s.Next(x)
			fmt.Println(x.Format(time.RFC3339), x.In(s.Location()).Format("15:04 MST"))
		}
	}
	// Output:
	// 2026-03-29T01:00:00Z 03:00 CEST
	// 2026-03-30T00:30:00Z 02:30 CEST
	// 2026-03-31T00:30:00Z 02:30 CEST
	// 2026-10-25T00:30:00Z 02:30 CEST
	// 2026-10-26T01:30:00Z 02:30 CET
	// 2026-10-27T01:30:00Z 02:30 CET
}

// An elapsed-time schedule follows real time: in the hour that happens twice
// it fires twice.
func ExampleSchedule_Next_elapsed() {
	s, err := schedule.Parse("30 * * * *", "Europe/Berlin")
	if err != nil {
		panic(err)
	}
	x := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)
	for range 3 {
		x = s.Next(x)
		fmt.Println(x.Format(time.RFC3339), x.In(s.Location()).Format("15:04 MST"))
	}
	// Output:
	// 2026-10-25T00:30:00Z 02:30 CEST
	// 2026-10-25T01:30:00Z 02:30 CET
	// 2026-10-25T02:30:00Z 03:30 CET
}

// Prev finds the slot a process that starts late has just missed.
func ExampleSchedule_Prev() {
	s, err := schedule.Parse("CRON_TZ=America/New_York 0 9 * * 1-5", "")
	if err != nil {
		panic(err)
	}
	started := time.Date(2026, 3, 9, 13, 0, 5, 0, time.UTC) // Monday 09:00:05 EDT
	fmt.Println(s.Prev(started).Format(time.RFC3339))
	// Output:
	// 2026-03-09T13:00:00Z
}

// A fixed-time schedule may choose what happens to the wall times a clock
// change skips or repeats: here none on the spring-forward day, and both
// occurrences of 02:30 on the fall-back day.
func ExampleSchedule_WithDST() {
	s, err := schedule.Parse("30 2 * * *", "Europe/Berlin")
	if err != nil {
		panic(err)
	}
	s, err = s.WithDST(schedule.DST{Gap: schedule.GapSkip, Repeat: schedule.RepeatBoth})
	if err != nil {
		panic(err)
	}
	for _, from := range []string{"2026-03-28T12:00:00Z", "2026-10-24T12:00:00Z"} {
		x, _ := time.Parse(time.RFC3339, from)
		for range 2 {
			x = s.Next(x)
			fmt.Println(x.Format(time.RFC3339), x.In(s.Location()).Format("01-02 15:04 MST"))
		}
	}
	// Output:
	// 2026-03-30T00:30:00Z 03-30 02:30 CEST
	// 2026-03-31T00:30:00Z 03-31 02:30 CEST
	// 2026-10-25T00:30:00Z 10-25 02:30 CEST
	// 2026-10-25T01:30:00Z 10-25 02:30 CET
}

// Day specials: the last weekday of the month, and the second Monday.
func ExampleParse_specials() {
	for _, spec := range []string{"0 9 LW * *", "0 10 * * MON#2"} {
		s, err := schedule.Parse(spec, "UTC")
		if err != nil {
			panic(err)
		}
		x := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		for range 2 {
			x = s.Next(x)
			fmt.Println(spec, x.Format("2006-01-02 Mon"))
		}
	}
	// Output:
	// 0 9 LW * * 2026-05-29 Fri
	// 0 9 LW * * 2026-06-30 Tue
	// 0 10 * * MON#2 2026-05-11 Mon
	// 0 10 * * MON#2 2026-06-08 Mon
}
