package schedule

import (
	"testing"
	"time"
)

// FuzzNext parses any spec and, when it is valid, checks Next's invariants:
// strictly after t, UTC, whole seconds, monotone in t, and consistent with
// Prev. No input may panic.
func FuzzNext(f *testing.F) {
	for _, tc := range dstCases {
		f.Add(tc.spec, zoneIndex(tc.tz), mustTime(f, tc.from).Unix(), uint32(3600))
	}
	for _, spec := range propertySpecs {
		f.Add(spec, uint8(1), int64(1774746000), uint32(59))
	}
	f.Add("CRON_TZ=Australia/Lord_Howe 0 2 * * *", uint8(0), int64(1791041400), uint32(1800))
	f.Add("TZ=America/Santiago 0 0 * * *", uint8(0), int64(1788667200), uint32(1))
	f.Fuzz(func(t *testing.T, spec string, zone uint8, unix int64, delta uint32) {
		s, err := Parse(spec, propertyZones[int(zone)%len(propertyZones)])
		if err != nil {
			return
		}
		// Keep t within years 1900-2200, where the tz data means something.
		const lo, span = -2208988800, 9467280000
		unix = lo + (unix%span+span)%span
		x := time.Unix(unix, 0)
		y := x.Add(time.Duration(delta) * time.Millisecond)
		nx, ny := s.Next(x), s.Next(y)
		if nx.IsZero() {
			return // none within 5 years: allowed
		}
		if !nx.After(x) || nx.Location() != time.UTC || nx.Nanosecond() != 0 {
			t.Fatalf("%q: Next(%v) = %v: want a UTC whole second after it", spec, x, nx)
		}
		if !ny.IsZero() && ny.Before(nx) {
			t.Fatalf("%q: Next(%v) = %v but Next(%v) = %v: not monotone", spec, x, nx, y, ny)
		}
		if p := s.Prev(nx); !p.Equal(nx) {
			t.Fatalf("%q: Prev(Next(%v)) = %v, want %v", spec, x, p, nx)
		}
		if nn := s.Next(nx); !nn.IsZero() && !nn.After(nx) {
			t.Fatalf("%q: Next(%v) = %v is not after it", spec, nx, nn)
		}
	})
}

// zoneIndex returns the index of tz in propertyZones.
func zoneIndex(tz string) uint8 {
	for i, z := range propertyZones {
		if z == tz {
			return uint8(i)
		}
	}
	return 0
}
