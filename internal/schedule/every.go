package schedule

import (
	"fmt"
	"math"
	"time"
)

// "@every D" slots are the instants k·D after the Unix epoch, for every
// integer k. Anchoring to the epoch rather than to start-up makes the slots
// a pure function of the spec, so every replica computes the same ones; the
// time zone plays no part.

// parseEvery checks the interval of an "@every" spec: a Go duration of a
// whole number of seconds, at least one.
func parseEvery(text string) (time.Duration, error) {
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("@every interval: %w", err)
	}
	if d < time.Second {
		return 0, fmt.Errorf("@every interval %s: must be at least 1s", d)
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("@every interval %s: must be a whole number of seconds", d)
	}
	return d, nil
}

// nextEvery returns the first multiple of the interval after x.
func (s *Schedule) nextEvery(x time.Time) time.Time {
	d := int64(s.every / time.Second)
	u := x.Unix()
	if u > math.MaxInt64-d {
		return time.Time{}
	}
	return time.Unix((floorDiv(u, d)+1)*d, 0).UTC()
}

// prevEvery returns the last multiple of the interval at or before x.
func (s *Schedule) prevEvery(x time.Time) time.Time {
	d := int64(s.every / time.Second)
	u := x.Unix()
	if u < math.MinInt64+d {
		return time.Time{}
	}
	return time.Unix(floorDiv(u, d)*d, 0).UTC()
}

// floorDiv returns a/b rounded towards minus infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
