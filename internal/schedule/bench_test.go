package schedule

import (
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	for _, bc := range []struct{ spec, tz string }{
		{"*/15 * * * *", "Europe/Berlin"},
		{"30 2 * * *", "Europe/Berlin"},
		{"0 9-17 * * 1-5", "America/New_York"},
		{"*/1 * * * * *", "Australia/Lord_Howe"},
		{"0 0 29 2 *", "UTC"},
		{"0 0 30 2 *", "UTC"},
		{"@every 7s", ""},
		{"0 9 LW * *", "Europe/Berlin"},
		{"0 10 * * MON#2,FRIL", "UTC"},
	} {
		s := mustParse(b, bc.spec, bc.tz)
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		b.Run(bc.spec+"/"+bc.tz, func(b *testing.B) {
			x := start
			for b.Loop() {
				if x = s.Next(x); x.IsZero() || x.Year() > 2100 {
					x = start
				}
			}
		})
	}
}
