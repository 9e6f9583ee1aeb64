package harness

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// overload is the one measurement of the overload section: more runs a
// second than one replica can start, on memstore.
type overload struct {
	jobs   int
	window time.Duration
	err    error
	loadB  string
	loadA  string

	expected, started, duplicates int64            // slots of the window; distinct starts; second starts
	recorded                      map[string]int64 // the window's markers: by state, skipped ones by reason
	skipped                       int64            // the window's slots recorded skipped (not run), any reason
	neither                       int64            // neither started nor recorded skipped
	// neitherFrom and neitherTo are the first and last second of the
	// window (from its start) that hold such a slot; -1 for none.
	neitherFrom, neitherTo int64
	missedMetric           map[string]int64

	rssBefore, maxRSS, hwm uint64 // bytes
	maxGoroutines          int
	// share is the sample of the heap profile, every 5 s, where the
	// replica's own share (its heap and the goroutine stacks) was largest.
	share       heapShare
	stop, grace time.Duration
	drain       time.Duration
	maxRunning  int // max_running in force
}

// startedSet notes which slots of the window started: one bit per job and
// second.
type startedSet struct {
	jobs, secs int64
	t0         int64
	bits       []atomic.Uint64
	total      atomic.Int64
	distinct   atomic.Int64
	dup        atomic.Int64
}

func newStartedSet(jobs int, t0, t1 int64) *startedSet {
	secs := t1 - t0
	return &startedSet{jobs: int64(jobs), secs: secs, t0: t0, bits: make([]atomic.Uint64, (int64(jobs)*secs+63)/64)}
}

func (s *startedSet) record(job int, slot time.Time) {
	s.total.Add(1)
	sec := slot.Unix() - s.t0
	if job < 0 || int64(job) >= s.jobs || sec < 0 || sec >= s.secs {
		return
	}
	i := int64(job)*s.secs + sec
	bit := uint64(1) << (i % 64)
	if s.bits[i/64].Or(bit)&bit != 0 {
		s.dup.Add(1)
		return
	}
	s.distinct.Add(1)
}

// procStatus returns VmRSS and VmHWM of this process, in bytes.
func procStatus() (rss, hwm uint64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	var kb uint64
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// overloadConfig sets max_running from -overload-max-running (0 leaves
// the default) in benchConfig's configuration, and returns the cap in
// force.
func overloadConfig(cfg *scheduler.Config, o *Options) int {
	cfg.MaxRunning = o.OverloadMaxRunning
	if cfg.MaxRunning == 0 {
		return scheduler.DefaultMaxRunning
	}
	return cfg.MaxRunning
}

// measureOverload runs o.OverloadJobs jobs due every second on memstore,
// through the public API, and measures the window [t0, t1) from -warmup
// after Run: RSS and goroutines sampled every 100 ms, the window's slots
// started, and after a drain long enough for every one of them to be
// started or recorded not run (the starting deadline and 5 s more, or
// -drain if longer), the store's record of the rest, read back through
// slotstore.Store.History.
func (e *env) measureOverload(ctx context.Context, o *Options) (m overload) {
	n := o.OverloadJobs
	m = overload{jobs: n, window: o.OverloadWindow, loadB: loadAvg()}
	defer func() { m.loadA = loadAvg() }()
	w := workload{jobs: n, everySecond: true}
	fmt.Fprintf(os.Stderr, "slotbench: overload, %s on memstore: window %v ...\n", w, o.OverloadWindow)
	time.Sleep(500 * time.Millisecond) // let the previous measurement's goroutines end
	runtime.GC()
	m.rssBefore, _ = procStatus()

	store := memstore.New(memstore.Options{})
	defer store.Close()
	cfg := benchConfig(w, "r1", scheduler.StoreConfig{Kind: "memory"})
	m.maxRunning = overloadConfig(cfg, o)
	m.grace = cfg.ShutdownGrace.D()
	if m.grace == 0 {
		m.grace = scheduler.DefaultShutdownGrace
	}
	deadline := cfg.Defaults.StartingDeadline.D()
	if deadline == 0 {
		deadline = scheduler.DefaultStartingDeadline
	}
	m.drain = max(o.Drain, deadline+5*time.Second)

	t0 := time.Now().Add(o.Warmup).Truncate(time.Second).Add(time.Second)
	t1 := t0.Add(o.OverloadWindow)
	set := newStartedSet(n, t0.Unix(), t1.Unix())
	m.expected = w.expected(t0.Unix(), t1.Unix())

	reg := jobs.NewRegistry()
	reg.Register("noop", func(_ context.Context, run jobs.Run) error {
		set.record(jobIndex(run.Job), run.Slot)
		return nil
	})
	metrics := prometheus.NewRegistry()
	logs := newWarnCounter()
	s, err := scheduler.New(cfg, reg, scheduler.WithStore(store), scheduler.WithLogger(logs.logger()),
		scheduler.WithRegistry(metrics))
	if err != nil {
		m.err = fmt.Errorf("scheduler.New: %w", err)
		return m
	}

	sampled := make(chan struct{})
	var maxRSS atomic.Uint64
	var maxG atomic.Int64
	var share heapShare // the sampler's until sampled closes
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if i%50 == 49 {
				if h := measureHeapShare(); h.replica+h.stacks > share.replica+share.stacks {
					share = h
				}
			}
			rss, _ := procStatus()
			if rss > maxRSS.Load() {
				maxRSS.Store(rss)
			}
			if g := int64(runtime.NumGoroutine()); g > maxG.Load() {
				maxG.Store(g)
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	stopProfile := startOverloadProfile(o.OverloadProfile)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Run(runCtx); err != nil {
			fmt.Fprintf(os.Stderr, "slotbench: overload Run: %v\n", err)
		}
	})
	sleepUntil(t1.Add(m.drain))
	stopProfile()
	c0 := time.Now()
	cancel()
	wg.Wait()
	m.stop = time.Since(c0)
	stopSampling()
	<-sampled
	m.maxRSS, m.maxGoroutines, m.share = maxRSS.Load(), int(maxG.Load()), share
	_, m.hwm = procStatus()
	if n := logs.n.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "slotbench: %d warnings logged (first 5 shown)\n", n)
	}

	m.started, m.duplicates = set.distinct.Load(), set.dup.Load()
	skippedSet := newStartedSet(n, t0.Unix(), t1.Unix())
	if m.recorded, err = windowRecord(ctx, store, n, t0, t1, skippedSet); err != nil {
		m.err = fmt.Errorf("history: %w", err)
		return m
	}
	skipped := int64(0)
	for k, v := range m.recorded {
		if strings.HasPrefix(k, string(slotstore.StateSkipped)+": ") {
			skipped += v
		}
	}
	m.skipped = skipped
	m.neither = m.expected - m.started - skipped
	m.neitherFrom, m.neitherTo = neitherSpan(set, skippedSet)
	m.missedMetric = missedByReason(metrics)
	return m
}

// windowRecord counts the markers of the window's slots the store holds,
// by state, and the skipped ones by their reason ("skipped: " + reason),
// and notes the skipped ones in skipped.
func windowRecord(ctx context.Context, st slotstore.Store, n int, t0, t1 time.Time, skipped *startedSet) (map[string]int64, error) {
	out := map[string]int64{}
	limit := int(t1.Sub(t0)/time.Second) + 10
	for i := range n {
		ms, err := st.History(ctx, slotstore.HistoryParams{Job: jobName(i), Before: t1, Limit: limit})
		if err != nil {
			return out, err
		}
		for _, mk := range ms {
			if mk.Slot.Before(t0) || !mk.Slot.Before(t1) {
				continue
			}
			k := string(mk.State)
			if mk.State == slotstore.StateSkipped {
				k += ": " + mk.Reason
				skipped.record(i, mk.Slot)
			}
			out[k]++
		}
	}
	return out, nil
}

// missedByReason sums slotcron_slots_missed_total over jobs, by reason.
func missedByReason(reg *prometheus.Registry) map[string]int64 {
	out := map[string]int64{}
	mfs, err := reg.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != "slotcron_slots_missed_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "reason" {
					out[l.GetValue()] += int64(mt.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// startOverloadProfile starts prefix's CPU and mutex profiles, if prefix is
// set, and returns what stops them and writes them with the heap profile
// (after a collection, so it holds what is live); a file that cannot be
// written is said on stderr, and the measurement goes on.
func startOverloadProfile(prefix string) (stop func()) {
	if prefix == "" {
		return func() {}
	}
	cpu, err := os.Create(prefix + "-cpu.pprof")
	if err == nil {
		err = pprof.StartCPUProfile(cpu)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "slotbench: overload CPU profile: %v\n", err)
	}
	runtime.SetMutexProfileFraction(mutexFraction)
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		runtime.GC()
		writeProfile(prefix+"-heap.pprof", "heap")
		writeProfile(prefix+"-mutex.pprof", "mutex")
		runtime.SetMutexProfileFraction(0)
	}
}

// mutexFraction is the share of contended locks the overload profile
// records (1 in mutexFraction): where goroutines waited on one another.
const mutexFraction = 10

// writeProfile writes the named runtime profile to path; a file that
// cannot be written is said on stderr.
func writeProfile(path, name string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "slotbench: overload %s profile: %v\n", name, err)
	}
}

// neitherSpan returns the first and last second of the window, from its
// start, holding a slot in neither started nor skipped; -1, -1 for none.
func neitherSpan(started, skipped *startedSet) (from, to int64) {
	from, to = -1, -1
	for w := range started.bits {
		left := ^(started.bits[w].Load() | skipped.bits[w].Load())
		for left != 0 {
			i := int64(w)*64 + int64(bits.TrailingZeros64(left))
			left &= left - 1
			if i >= started.jobs*started.secs {
				break
			}
			sec := i % started.secs
			if from < 0 || sec < from {
				from = sec
			}
			to = max(to, sec)
		}
	}
	return from, to
}
