package harness

import (
	"testing"
	"time"
)

func TestStartedSet(t *testing.T) {
	s := newStartedSet(3, 100, 110)
	for _, c := range []struct {
		job int
		sec int64
	}{{0, 100}, {2, 109}, {2, 109}, {1, 99}, {1, 110}, {3, 105}} {
		s.record(c.job, unix(c.sec))
	}
	if s.total.Load() != 6 || s.distinct.Load() != 2 || s.dup.Load() != 1 {
		t.Errorf("total %d distinct %d duplicates %d; want 6 2 1", s.total.Load(), s.distinct.Load(), s.dup.Load())
	}
}

func unix(sec int64) time.Time { return time.Unix(sec, 0) }
