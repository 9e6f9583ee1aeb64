package engine

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
)

// BenchmarkLastOfRuns: the walk a configuration's resolve makes for a job
// with max_runs at its bound, 100,000, with and without a calendar of 20
// dates a year to pass over.
func BenchmarkLastOfRuns(b *testing.B) {
	var hol Calendar
	for y := 2026; y < 2400; y++ {
		for d := range 20 {
			hol.Dates = append(hol.Dates, time.Date(y, 1, 1+d*18, 0, 0, 0, 0, time.UTC).Format(time.DateOnly))
		}
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name, spec string
		cals       []Calendar
	}{
		{"daily", "0 2 * * *", nil},
		{"daily-calendar", "0 2 * * *", []Calendar{hol}},
		{"hourly", "0 * * * *", nil},
	} {
		s, err := schedule.Parse(bc.spec, "Europe/Berlin")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if LastOfRuns(s, bc.cals, from, 100000).IsZero() {
					b.Fatal("no end")
				}
			}
		})
	}
}
