package harness

import "testing"

func TestWorkloadPeriods(t *testing.T) {
	for _, w := range []workload{{jobs: 130}, {jobs: 130, everySecond: true}, {jobs: 7300, hourly: true}} {
		for _, s := range []int64{1700000000, 1700000059, 1700003599} {
			for _, i := range []int{0, 1, 59, 61, 129, 3601} {
				if i >= w.jobs {
					continue
				}
				n := w.next(i, s)
				if n <= s || !w.fires(i, n) {
					t.Fatalf("%v: next(%d, %d) = %d", w, i, s, n)
				}
				for x := s + 1; x < n; x++ {
					if w.fires(i, x) {
						t.Fatalf("%v: next(%d, %d) = %d skips %d", w, i, s, n, x)
					}
				}
			}
			var c int64
			for x := s; x < s+7200; x++ {
				for i := range w.jobs {
					if w.fires(i, x) {
						c++
					}
				}
			}
			if e := w.expected(s, s+7200); e != c {
				t.Fatalf("%v: expected %d, counted %d", w, e, c)
			}
		}
	}
}
