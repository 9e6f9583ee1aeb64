package schedule_test

import (
	"fmt"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
)

// "@every" slots are anchored to the Unix epoch, not to when a process
// started: two replicas started at different times agree on them.
func ExampleParse_every() {
	s, err := schedule.Parse("@every 30s", "")
	if err != nil {
		panic(err)
	}
	a := time.Date(2026, 6, 1, 12, 0, 7, 0, time.UTC)
	b := time.Date(2026, 6, 1, 12, 0, 21, 500_000_000, time.UTC)
	fmt.Println(s.Every(), s.Next(a).Format(time.TimeOnly), s.Next(b).Format(time.TimeOnly))
	// Output:
	// 30s 12:00:30 12:00:30
}

// Errors say which part of the input is wrong.
func ExampleParse_errors() {
	for _, in := range [][2]string{
		{"61 * * * *", "UTC"},
		{"0 2 * * *", "Mars/Base"},
		{"@every 1500ms", ""},
	} {
		_, err := schedule.Parse(in[0], in[1])
		fmt.Println(err)
	}
	// Output:
	// bad spec "61 * * * *": minute 61 out of range 0–59
	// bad spec "0 2 * * *": unknown time zone "Mars/Base"
	// bad spec "@every 1500ms": @every interval 1.5s: must be a whole number of seconds
}
