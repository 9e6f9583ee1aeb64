package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

var propertySpecs = []string{
	"30 2 * * *", "0 2 * * *", "30 1 * * *", "0 0 * * *", "0,30 2 * * *", "*/10 1-3 * * *", "45 23 * * 0",
	"*/30 * * * *", "0 * * * *", "0 */2 * * *", "15 0-23/3 * * *", "*/7 * * * * *", "@hourly",
	"@daily", "@weekly", "@monthly", "@yearly", "0 0 29 2 *", "0 0 1,15 * 1", "@every 7s", "@every 25h",
	"0 9 LW * *", "0 10 * * MON#2", "0 18 * * 5L", "30 2 L-3 * *", "0 2 15W * *", "0 0 1,L * 5#5", "*/20 2 * * SUNL",
}

var propertyZones = []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata"}

// Next and Prev agree with each other at random times, many of them close
// to a transition.
func TestNextPrevConsistent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, tz := range propertyZones {
		for _, spec := range propertySpecs {
			s := mustParse(t, spec, tz)
			for range 200 {
				x := time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(1e9))
				if rng.IntN(2) == 0 { // near a transition of the zone
					_, end := x.In(s.loc).ZoneBounds()
					if !end.IsZero() {
						x = end.Add(time.Duration(rng.Int64N(int64(4*time.Hour))) - 2*time.Hour)
					}
				}
				checkNextPrev(t, s, x)
			}
		}
	}
}

// The same under every DST rule, for the fixed-time specs.
func TestNextPrevConsistentDST(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, tz := range propertyZones {
		for _, spec := range propertySpecs {
			if !mustParse(t, spec, tz).Fixed() {
				continue
			}
			for _, rule := range dstRules[1:] {
				s := mustDST(t, spec, tz, rule)
				for range 100 {
					x := time.Unix(lo+rng.Int64N(hi-lo), 0)
					if _, end := x.In(s.loc).ZoneBounds(); !end.IsZero() && rng.IntN(4) > 0 {
						x = end.Add(time.Duration(rng.Int64N(int64(4*time.Hour))) - 2*time.Hour)
					}
					checkNextPrev(t, s, x)
				}
			}
		}
	}
}

// checkNextPrev checks the invariants that tie Next and Prev together at t.
func checkNextPrev(t *testing.T, s *Schedule, x time.Time) {
	t.Helper()
	next, prev := s.Next(x), s.Prev(x)
	if next.IsZero() || prev.IsZero() {
		t.Fatalf("%s in %s at %v: Next = %v, Prev = %v; want slots", s, s.loc, x, next, prev)
	}
	switch {
	case !next.After(x):
		t.Fatalf("%s in %s: Next(%v) = %v is not after it", s, s.loc, x, next)
	case prev.After(x):
		t.Fatalf("%s in %s: Prev(%v) = %v is after it", s, s.loc, x, prev)
	case !s.Prev(next).Equal(next):
		t.Fatalf("%s in %s: Prev(Next(%v)) = %v, want %v", s, s.loc, x, s.Prev(next), next)
	case !s.Next(prev).Equal(next):
		t.Fatalf("%s in %s: Next(Prev(%v)) = %v, want Next = %v", s, s.loc, x, s.Next(prev), next)
	case !s.Prev(next.Add(-time.Second)).Equal(prev):
		t.Fatalf("%s in %s at %v: no slot may lie between Prev %v and Next %v, but Prev(Next-1s) = %v",
			s, s.loc, x, prev, next, s.Prev(next.Add(-time.Second)))
	}
}
