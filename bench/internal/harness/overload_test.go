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

// The seconds that hold a slot neither started nor recorded skipped are
// found across words of the sets, and none gives -1, -1.
func TestNeitherSpan(t *testing.T) {
	started, skipped := newStartedSet(3, 100, 140), newStartedSet(3, 100, 140)
	for job := range 3 {
		for sec := int64(100); sec < 140; sec++ {
			switch {
			case job == 1 && (sec == 107 || sec == 131):
			case sec%2 == 0:
				started.record(job, unix(sec))
			default:
				skipped.record(job, unix(sec))
			}
		}
	}
	if from, to := neitherSpan(started, skipped); from != 7 || to != 31 {
		t.Errorf("span %d–%d; want 7–31", from, to)
	}
	started.record(1, unix(107))
	skipped.record(1, unix(131))
	if from, to := neitherSpan(started, skipped); from != -1 || to != -1 {
		t.Errorf("span %d–%d with every slot accounted for; want -1–-1", from, to)
	}
}
