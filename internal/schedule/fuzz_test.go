package schedule

import (
	"errors"
	"fmt"
	"strings"
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
	// Day specials, and the DST rules (zone/8 picks one) around Berlin's
	// 2026 transitions.
	f.Add("0 30 2 L-3 * *", uint8(1+8), int64(1774742400), uint32(3600))
	f.Add("30 2 * * *", uint8(1+16), int64(1792886400), uint32(3600))
	f.Add("0,30 2 LW * 5L", uint8(1+24), int64(1774742400), uint32(59))
	f.Add("0 10 * * MON#2,FRIL", uint8(2+8), int64(1772323200), uint32(86400))
	f.Add("0 0 1W,15W,31W * *", uint8(3), int64(1785542400), uint32(1))
	f.Fuzz(func(t *testing.T, spec string, zone uint8, unix int64, delta uint32) {
		s, err := Parse(spec, propertyZones[int(zone)%len(propertyZones)])
		if err != nil {
			return
		}
		if rule := dstRules[int(zone/8)%len(dstRules)]; s.Fixed() {
			if s, err = s.WithDST(rule); err != nil {
				t.Fatalf("%q: WithDST(%+v): %v", spec, rule, err)
			}
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

// FuzzParse parses any spec in any time zone name: no input may panic or
// hang; a refused one is an ErrInvalid error naming the spec; an accepted one
// keeps its spec, never reads the host's local zone, and answers Next and
// Prev within their horizon.
func FuzzParse(f *testing.F) {
	for _, tc := range []struct{ spec, tz string }{
		// From TestParse.
		{"30 2 * * *", "Europe/Berlin"}, {"0 9-17 * * 1-5", "America/New_York"}, {"*/15 9-17 * * mon-fri", "UTC"},
		{"0 30 2 * * *", ""}, {"0 0-23/3 * * *", ""}, {"0 ? * * *", ""}, {"@annually", ""}, {"@hourly", ""},
		{"@every 1h30m", ""}, {"CRON_TZ=America/New_York 0 9 * * *", "Europe/Berlin"},
		{"TZ=Asia/Tokyo 0 9 * * *", ""}, {"CRON_TZ=Europe/Berlin @every 7s", ""}, {"  0 9 * * *  ", ""},
		// From TestParseErrors.
		{"61 * * * *", ""}, {"*/0 * * * *", ""}, {"0 , * * *", ""}, {"* * * * * * *", ""}, {"   ", ""},
		{"0 * * * *", "Mars/Base"}, {"TZ=Local 0 * * * *", "UTC"}, {"CRON_TZ= 0 * * * *", ""},
		{"TZ=UTC TZ=UTC 0 * * * *", ""}, {"@every 1500ms", ""}, {"@every -5s", ""}, {"@every 1s 2s", ""},
		{"@fortnightly", ""}, {"@daily 5", ""},
		// Day specials, from TestParseSpecials and TestParseSpecialsErrors.
		{"0 0 L * *", ""}, {"0 0 L-3 * *", ""}, {"0 0 15W * *", ""}, {"0 0 LW * *", ""}, {"0 0 * * MON#2", ""},
		{"0 0 * * 5L", ""}, {"0 0 1,15,L * *", ""}, {"0 0 * * mon#1,fril", "Europe/Berlin"}, {"0 0 * * 7#5", ""},
		{"0 0 L-40 * *", ""}, {"0 0 * * MON#6", ""}, {"0 0 * * L", ""}, {"0 0 1#2 * *", ""}, {"0 0 * * 5W", ""},
		{"0 L * * *", ""}, {"0 0 L, * *", ""}, {"0 0 32W * *", ""}, {"0 0 * * #", ""}, {"0 0 L-L * *", ""},
		// Zones with odd offsets and rules.
		{"0 2 * * *", "Australia/Lord_Howe"}, {"30 1 * * *", "Asia/Kathmandu"}, {"0 0 * * *", "Etc/GMT-14"},
		{"0 0 * * *", "Antarctica/Troll"}, {"*/5 * * * *", "Factory"},
	} {
		f.Add(tc.spec, tc.tz)
	}
	at := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec, tz string) {
		s, err := Parse(spec, tz)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), fmt.Sprintf("bad spec %q: ", spec)) {
				t.Fatalf("Parse(%q, %q) error %q: want ErrInvalid naming the spec", spec, tz, err)
			}
			return
		}
		if s.String() != spec || s.Location() == nil || s.Location() == time.Local || s.Location().String() == "Local" {
			t.Fatalf("Parse(%q, %q) = spec %q, zone %v", spec, tz, s, s.Location())
		}
		if e := s.Every(); e != 0 && (e < time.Second || e%time.Second != 0) {
			t.Fatalf("Parse(%q) every %v: want whole seconds, at least 1s", spec, e)
		}
		next, prev := s.Next(at), s.Prev(at)
		if !next.IsZero() && (!next.After(at) || next.After(at.AddDate(horizonYears, 0, 0))) {
			t.Fatalf("%q in %s: Next(%v) = %v: not after it within the horizon", spec, s.Location(), at, next)
		}
		if !prev.IsZero() && (prev.After(at) || prev.Before(at.AddDate(-horizonYears, 0, 0))) {
			t.Fatalf("%q in %s: Prev(%v) = %v: not at or before it within the horizon", spec, s.Location(), at, prev)
		}
	})
}
