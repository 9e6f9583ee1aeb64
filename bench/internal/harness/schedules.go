package harness

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	"github.com/slotcron/slotcron/slotstore"
)

// schedMeasurement is one measurement of the schedules section: n spread
// slots held as data (or, with yaml, as many YAML jobs, for comparison) on
// one store, from the put through start-up to the window's outcome.
type schedMeasurement struct {
	n     int
	c     contestant
	yaml  bool
	err   error
	loadB string
	loadA string

	put      time.Duration // PutAll of the n schedules (schedules only)
	putFail  int           // schedules PutAll refused
	batch    int           // schedules per store round trip
	startup  time.Duration // Run called → first run entered, the earliest replica
	startupL time.Duration // the same, the last replica to dispatch its first run
	firstLag time.Duration // the first run entered minus its slot
	loaded   time.Duration // Run called → the last replica's start-up over (every job enrolled and scheduled); 0: not in the window
	heapPer  float64       // live heap after start-up minus before, per schedule per replica
	out      outcome
	retakes  int64 // starts with jobs.Run.Attempt > 1, anywhere in the run
	warnings int64
	stop     time.Duration
	profile  string // CPU profile of the start-up, when asked for
}

func (m schedMeasurement) label() string {
	if m.yaml {
		return m.c.name + " (YAML jobs)"
	}
	return m.c.name + " (schedules)"
}

// schedIDs: schedule i's ID (and YAML job i's name) is jobName(i), so the
// recorder and jobIndex serve both.

// measureSchedules puts n spread schedules of the registered job "noop" in
// a fresh store (unless yaml: then the configuration holds n YAML jobs of
// the same specs), starts c's replicas, and measures the start-up, the heap
// it added and the window as the dispatch section does.
func (e *env) measureSchedules(ctx context.Context, o *Options, c contestant, n int, yaml bool) (m schedMeasurement) {
	m = schedMeasurement{n: n, c: c, yaml: yaml, loadB: loadAvg(), batch: slotstore.MaxScheduleWrites}
	defer func() { m.loadA = loadAvg() }()
	w := workload{jobs: n, hourly: o.SchedHourly}
	fmt.Fprintf(os.Stderr, "slotbench: schedules: %s, %s ...\n", m.label(), w)

	e.seq++
	ns := fmt.Sprintf("sbs%d_%d", time.Now().Unix()%100000, e.seq)
	var stores []slotstore.Store
	var shared slotstore.Store
	var scs []scheduler.StoreConfig
	for range c.replicas {
		st, sc, err := e.openStore(ctx, c.kind, ns)
		if c.kind == kindMemory && shared != nil {
			st = shared
		} else if err != nil {
			m.err = err
			break
		} else {
			stores = append(stores, st)
			shared = st
		}
		scs = append(scs, sc)
	}
	defer func() {
		for _, s := range stores {
			s.Close()
		}
		e.dropNamespace(c.kind, ns)
	}()
	if m.err != nil {
		return m
	}
	if c.kind == kindMemory {
		stores = stores[:1]
	}

	var first atomic.Int64 // UnixNano of the first run entered
	var retakes atomic.Int64
	var firstSlot atomic.Int64
	firstBy := make([]atomic.Int64, c.replicas)
	var rec atomic.Pointer[recorder]
	newReg := func(r int) *jobs.Registry {
		reg := jobs.NewRegistry()
		reg.Register("noop", func(_ context.Context, run jobs.Run) error {
			now := time.Now()
			if run.Attempt > 1 {
				retakes.Add(1)
			}
			if firstBy[r].Load() == 0 {
				firstBy[r].CompareAndSwap(0, now.UnixNano())
				if first.CompareAndSwap(0, now.UnixNano()) {
					firstSlot.Store(run.Slot.UnixNano())
				}
			}
			rec.Load().record(jobIndex(run.Job), run.Slot, now)
			return nil
		})
		return reg
	}

	if !yaml {
		cfg := benchConfig(workload{}, "writer", scs[0])
		all := make([]scheduler.Schedule, n)
		for i := range n {
			all[i] = scheduler.Schedule{ID: jobName(i), Job: "noop", Schedule: w.spec(i)}
		}
		t := time.Now()
		res, err := scheduler.NewSchedules(stores[0], cfg, newReg(0)).By("slotbench").PutAll(ctx, all)
		m.put = time.Since(t)
		if err != nil {
			m.err = err
			return m
		}
		for _, r := range res {
			if r.Err != nil {
				if m.putFail == 0 {
					fmt.Fprintf(os.Stderr, "slotbench: put: %v\n", r.Err)
				}
				m.putFail++
			}
		}
		fmt.Fprintf(os.Stderr, "slotbench: put %d schedules in %v (%d refused)\n", n, m.put.Round(time.Millisecond), m.putFail)
	}
	time.Sleep(500 * time.Millisecond) // let the previous measurement's goroutines end
	h0 := heapAfterGC()

	logs := newWarnCounter()
	logs.startup(c.replicas)
	var scheds []*scheduler.Scheduler
	for r := range c.replicas {
		cfgW := workload{}
		if yaml {
			cfgW = w
		}
		st := stores[0]
		if r < len(stores) {
			st = stores[r]
		}
		s, err := scheduler.New(benchConfig(cfgW, fmt.Sprintf("r%d", r+1), scs[r]), newReg(r),
			scheduler.WithStore(st), scheduler.WithLogger(logs.logger()))
		if err != nil {
			m.err = fmt.Errorf("scheduler.New: %w", err)
			return m
		}
		scheds = append(scheds, s)
	}

	var profile *os.File
	stopProfile := func() {
		if profile != nil {
			pprof.StopCPUProfile()
			profile.Close()
			profile = nil
		}
	}
	defer stopProfile()
	if o.SchedProfile != "" {
		name := fmt.Sprintf("%s-%s%d-%s-%d.pprof", o.SchedProfile, c.kind, c.replicas, map[bool]string{true: "yaml", false: "schedules"}[yaml], n)
		if f, err := os.Create(name); err == nil {
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
			} else {
				profile, m.profile = f, name
			}
		}
	}

	t0 := time.Now().Add(o.Warmup).Truncate(time.Second).Add(time.Second)
	t1 := t0.Add(o.SchedWindow)
	rec.Store(newRecorder(w, t0.Unix(), t1.Unix()))
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	runAt := time.Now()
	for _, s := range scheds {
		wg.Go(func() {
			if err := s.Run(runCtx); err != nil {
				fmt.Fprintf(os.Stderr, "slotbench: %s Run: %v\n", s.Replica(), err)
			}
		})
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		t := time.Now()
		cancel()
		wg.Wait()
		m.stop = time.Since(t)
		m.warnings = logs.n.Load()
		if m.warnings > 0 {
			fmt.Fprintf(os.Stderr, "slotbench: %d warnings logged (first 5 shown)\n", m.warnings)
		}
	}
	defer stop()

	// Start-up: until every replica entered its first run and ended its
	// start-up, or the window ended.
	for time.Now().Before(t1) {
		all := logs.startedAt.Load() != 0
		for r := range firstBy {
			all = all && firstBy[r].Load() != 0
		}
		if all {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	stopProfile()
	if at := logs.startedAt.Load(); at != 0 {
		m.loaded = time.Unix(0, at).Sub(runAt)
		fmt.Fprintf(os.Stderr, "slotbench: every replica's start-up over %v after Run\n", m.loaded.Round(time.Millisecond))
	}
	if f := first.Load(); f != 0 {
		m.startup = time.Unix(0, f).Sub(runAt)
		m.firstLag = time.Unix(0, f).Sub(time.Unix(0, firstSlot.Load()))
		for r := range firstBy {
			if l := firstBy[r].Load(); l != 0 {
				m.startupL = max(m.startupL, time.Unix(0, l).Sub(runAt))
			}
		}
		fmt.Fprintf(os.Stderr, "slotbench: first run entered %v after Run (last replica %v)\n",
			m.startup.Round(time.Millisecond), m.startupL.Round(time.Millisecond))
	}
	h1 := heapAfterGC()
	runtime.KeepAlive(scheds)
	m.heapPer = (float64(h1) - float64(h0)) / float64(n) / float64(c.replicas)

	sleepUntil(t1)
	r := rec.Load()
	for end := time.Now().Add(o.Drain); time.Now().Before(end) && r.distinct() < w.expected(r.t0, r.t1); {
		time.Sleep(50 * time.Millisecond)
	}
	m.out = r.outcome() // before the stop, which may take minutes when the replica fell behind
	stop()
	m.retakes = retakes.Load()
	late := slices.Clone(m.out.late)
	slices.Sort(late)
	fmt.Fprintf(os.Stderr, "slotbench: %s: started %d / expected %d, duplicates %d (attempt ≥ 2: %d), p50 %s p99 %s ms, heap %.0f B per schedule per replica, Run returned %v after cancel\n",
		m.label(), m.out.started, m.out.expected, m.out.duplicates, m.retakes, ms(quantile(late, 0.5)), ms(quantile(late, 0.99)), m.heapPer, m.stop.Round(time.Millisecond))
	return m
}

// dropNamespace frees what a measurement left in a server: a Postgres
// schema, Redis keys (the server is flushed: measurements run one at a
// time), an etcd prefix.
func (e *env) dropNamespace(kind storeKind, ns string) {
	switch kind {
	case kindPostgres:
		if e.dsn != "" {
			_ = e.pgExec(e.dsn, "DROP SCHEMA IF EXISTS "+ns+" CASCADE")
		}
	case kindRedis:
		if e.rdb != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = e.rdb.FlushAll(ctx).Err()
		}
	case kindEtcd:
		e.etcdDrop(ns + "/")
	}
}

// schedRows reports the schedules section: per size and store, the put,
// the start-up and heap, and the window, schedules beside YAML jobs.
func schedRows(o *Options, res *results) []row {
	var rows []row
	type key struct {
		n    int
		name string
		yaml bool
	}
	by := map[key][]schedMeasurement{}
	for _, m := range res.schedules {
		k := key{m.n, m.c.name, m.yaml}
		by[k] = append(by[k], m)
	}
	for _, n := range o.SchedSizes {
		for _, c := range storeContestants(o.SchedStores) {
			var yamlP99 time.Duration
			var yamlStart, yamlHeap float64
			haveYAML := false
			for _, yaml := range []bool{true, false} {
				mss := by[key{n, c.name, yaml}]
				if len(mss) == 0 {
					continue
				}
				var ok []schedMeasurement
				var loads []string
				var err error
				var out outcome
				var warnings, retakes int64
				var stop time.Duration
				for _, m := range mss {
					loads = append(loads, m.loadB+"→"+m.loadA)
					if m.err != nil {
						err = m.err
						continue
					}
					ok = append(ok, m)
					out.expected += m.out.expected
					out.started += m.out.started
					out.duplicates += m.out.duplicates
					out.missing += m.out.missing
					out.unexpected += m.out.unexpected
					out.late = append(out.late, m.out.late...)
					out.gaps = append(out.gaps, m.out.gaps...)
					warnings += m.warnings
					retakes += m.retakes
					stop = max(stop, m.stop)
				}
				load := joinS(loads)
				wl := map[bool]string{true: "spread over the hour, ", false: "spread, "}[o.SchedHourly] + count(n) + " " + map[bool]string{true: "YAML jobs", false: "schedules"}[yaml]
				who := mss[0].label()
				if len(ok) == 0 {
					rows = append(rows, row{section: "6 schedules", workload: wl, who: who, figure: "–", value: skipped(err), vs: "–", load: load})
					continue
				}
				if !yaml {
					rate := median(ok, func(m schedMeasurement) float64 { return float64(m.n) / m.put.Seconds() })
					put := median(ok, func(m schedMeasurement) float64 { return m.put.Seconds() })
					fails := 0
					for _, m := range ok {
						fails += m.putFail
					}
					rows = append(rows, row{section: "6 schedules", workload: wl, who: who,
						figure: "put rate, schedules/s (median of rounds)", value: num(rate), vs: "–",
						notes: fmt.Sprintf("PutAll of %s schedules took %.1f s (median), %d per store round trip; %d refused", count(n), put, ok[0].batch, fails),
						load:  load})
				}
				st := median(ok, func(m schedMeasurement) float64 { return m.startup.Seconds() })
				stL := median(ok, func(m schedMeasurement) float64 { return m.startupL.Seconds() })
				lag := median(ok, func(m schedMeasurement) float64 { return m.firstLag.Seconds() })
				heap := median(ok, func(m schedMeasurement) float64 { return m.heapPer })
				r := row{section: "6 schedules", workload: wl, who: who,
					figure: "start-up: Run → first run entered (s) · live heap per schedule per replica (median of rounds)",
					value:  fmt.Sprintf("%.2f s · %s", st, bytesPerJob(heap)), vs: "–", load: load}
				r.notes = fmt.Sprintf("first run %s ms after its slot", ms0(lag))
				if slices.ContainsFunc(ok, func(m schedMeasurement) bool { return m.loaded == 0 }) {
					r.notes += "; a start-up not over by the window's end (heap measured then)"
				} else {
					r.notes += fmt.Sprintf("; every job enrolled and scheduled %.2f s after Run (heap measured then)",
						median(ok, func(m schedMeasurement) float64 { return m.loaded.Seconds() }))
				}
				if c.replicas > 1 {
					r.notes += fmt.Sprintf("; the last of %d replicas entered its first run %.2f s after Run", c.replicas, stL)
				}
				if st > 2 && !yaml {
					r.notes += "; OVER the 2 s goal"
				}
				for _, m := range ok {
					if m.profile != "" {
						r.notes += "; CPU profile " + m.profile
					}
				}
				if yaml {
					yamlStart, yamlHeap = st, heap
				} else if haveYAML {
					r.vs = fmt.Sprintf("YAML jobs: start-up %s, heap %s", ratio(st, yamlStart), ratio(heap, yamlHeap))
				}
				rows = append(rows, r)

				slices.Sort(out.late)
				r = row{section: "6 schedules", workload: wl, who: who, figure: "lateness p50 · p99 · max (ms)", vs: "–", load: load}
				if len(out.late) == 0 {
					r.value = "no slot started"
				} else {
					p99 := quantile(out.late, 0.99)
					r.value = ms(quantile(out.late, 0.50)) + " · " + ms(p99) + " · " + ms(out.late[len(out.late)-1])
					if yaml {
						yamlP99, haveYAML = p99, true
					} else if haveYAML {
						r.vs = "YAML jobs p99 " + ratio(float64(p99), float64(yamlP99))
					}
				}
				r.notes = fmt.Sprintf("window %v · started %d / expected %d · duplicates %d · missing %d", o.SchedWindow, out.started, out.expected, out.duplicates, out.missing)
				if len(out.gaps) > 0 {
					r.notes += " (seconds of the window short: " + joinS(out.gaps) + ")"
				}
				if out.unexpected > 0 {
					r.notes += fmt.Sprintf(" · off-schedule %d", out.unexpected)
				}
				if stop > 0 {
					r.notes += fmt.Sprintf(" · Run returned %s after cancel", stop.Round(time.Millisecond))
				}
				if retakes > 0 {
					r.notes += fmt.Sprintf(" · %d starts were a retake (jobs.Run.Attempt ≥ 2, after a lost lease)", retakes)
				}
				if warnings > 0 {
					r.notes += fmt.Sprintf(" · %d warnings logged", warnings)
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

func ms0(s float64) string { return ms(time.Duration(s * float64(time.Second))) }

func joinS(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
