package harness

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// workload is the set of jobs every contestant schedules.
type workload struct {
	jobs        int
	everySecond bool // every job every second; otherwise job i at second i%60 (of each minute)
	hourly      bool // job i at second i%3600 of each hour, rather than of each minute
}

func (w workload) String() string {
	switch {
	case w.everySecond:
		return "every second, " + count(w.jobs) + " jobs"
	case w.hourly:
		return "spread over the hour, " + count(w.jobs) + " jobs"
	}
	return "spread, " + count(w.jobs) + " jobs"
}

// period is the span, in seconds, over which the jobs' slots spread.
func (w workload) period() int64 {
	switch {
	case w.everySecond:
		return 1
	case w.hourly:
		return 3600
	}
	return 60
}

// spec is job i's cron spec, with a seconds field.
func (w workload) spec(i int) string {
	switch {
	case w.everySecond:
		return "* * * * * *"
	case w.hourly:
		return itoa(i%60) + " " + itoa(i/60%60) + " * * * *"
	}
	return itoa(i%60) + " * * * * *"
}

// fires reports whether job i has a slot at Unix second s.
func (w workload) fires(i int, s int64) bool {
	p := w.period()
	return s%p == int64(i)%p
}

// expected counts the slots of the workload in [t0, t1).
func (w workload) expected(t0, t1 int64) int64 {
	p := w.period()
	var n int64
	for s := t0; s < t1; s++ {
		n += int64(w.jobs) / p
		if s%p < int64(w.jobs)%p {
			n++
		}
	}
	return n
}

// next returns job i's first slot after s (a Unix second).
func (w workload) next(i int, s int64) int64 {
	p := w.period()
	n := s + 1
	return n + ((int64(i)%p-n%p)%p+p)%p
}

// recorder counts the starts of one measurement. Only slots in the window
// [t0, t1) are judged; every start counts in total.
type recorder struct {
	w      workload
	t0, t1 int64

	total atomic.Int64

	mu         sync.Mutex
	counts     map[uint64]uint16
	perSecond  []int64         // distinct slots started, by second of the window
	late       []time.Duration // of each slot's first start
	unexpected int64
}

func newRecorder(w workload, t0, t1 int64) *recorder {
	return &recorder{w: w, t0: t0, t1: t1, counts: make(map[uint64]uint16, w.expected(t0, t1)), perSecond: make([]int64, t1-t0)}
}

// record notes that job i's slot started at entered.
func (r *recorder) record(i int, slot, entered time.Time) {
	r.total.Add(1)
	s := slot.Unix()
	if s < r.t0 || s >= r.t1 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.w.fires(i, s) || i < 0 || i >= r.w.jobs {
		r.unexpected++
		return
	}
	k := uint64(i)<<32 | uint64(s-r.t0)
	c := r.counts[k]
	r.counts[k] = c + 1
	if c == 0 {
		r.perSecond[s-r.t0]++
		r.late = append(r.late, entered.Sub(slot))
	}
}

// distinct counts the window's slots started so far.
func (r *recorder) distinct() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.counts))
}

// outcome is what a recorder saw.
type outcome struct {
	expected, started, duplicates, missing, unexpected int64
	late                                               []time.Duration
	gaps                                               []string // seconds of the window with slots missing, as +a–+bs
}

func (r *recorder) outcome() outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := outcome{expected: r.w.expected(r.t0, r.t1), unexpected: r.unexpected}
	for _, c := range r.counts {
		o.started++
		o.duplicates += int64(c) - 1
	}
	o.missing = o.expected - o.started
	start := -1
	for i := range len(r.perSecond) + 1 {
		short := i < len(r.perSecond) && r.perSecond[i] < r.w.expected(r.t0+int64(i), r.t0+int64(i)+1)
		switch {
		case short && start < 0:
			start = i
		case !short && start >= 0:
			o.gaps = append(o.gaps, fmt.Sprintf("+%d–+%ds", start, i-1))
			start = -1
		}
	}
	o.late = slices.Clone(r.late)
	return o
}

// quantile returns the q-quantile of sorted d (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
