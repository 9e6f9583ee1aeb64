package harness

import (
	"context"
	"fmt"
	"os"
	"time"
)

// contestant is one scheduler under test: a slotcron store (and replica
// count) or a peer.
type contestant struct {
	name     string
	peer     bool
	kind     storeKind // slotcron only
	replicas int       // slotcron only
}

func contestants(o *Options) []contestant {
	cs := storeContestants(o.Stores)
	for _, p := range o.Peers {
		cs = append(cs, contestant{name: p, peer: true})
	}
	return cs
}

// storeContestants are slotcron on each of stores, by their -stores names
// (redis3 and etcd3 are three replicas).
func storeContestants(stores []string) []contestant {
	var cs []contestant
	for _, s := range stores {
		c := contestant{name: "slotcron/" + s, kind: storeKind(s), replicas: 1}
		switch s {
		case "redis3":
			c = contestant{name: "slotcron/redis×3", kind: kindRedis, replicas: 3}
		case "etcd3":
			c = contestant{name: "slotcron/etcd×3", kind: kindEtcd, replicas: 3}
		}
		cs = append(cs, c)
	}
	return cs
}

// measurement is one run of one contestant on one workload.
type measurement struct {
	w       workload
	c       contestant
	rt      bool          // a round-trips measurement: its own window, the store's requests counted
	window  time.Duration // measured
	err     error
	out     outcome
	loadB   string // /proc/loadavg before and after
	loadA   string
	cpu     time.Duration // process CPU in the window
	mallocs uint64        // heap allocations in the window
	starts  int64         // starts of any slot in the window
	// Store requests and the starts they served (Redis, etcd: in the
	// window; Postgres: from before start-up to after shutdown); rt only.
	trips, tripStarts int64
	redis             redisCounts // Redis: the commands, from MONITOR
	etcd              etcdCounts  // etcd: the trips by method, and raft proposals
	warnings          int64
	stop              time.Duration // slotcron: from cancel to every Run returned
}

func (e *env) start(ctx context.Context, c contestant, w workload, rec *recorder) (func(), error) {
	switch {
	case !c.peer:
		return e.startSlotcron(ctx, c.kind, c.replicas, w, rec)
	case c.name == "robfig":
		return startRobfig(ctx, w, rec)
	case c.name == "gocron":
		return startGocron(ctx, w, rec)
	case c.name == "timer":
		return startTimer(ctx, w, rec)
	}
	return nil, fmt.Errorf("unknown contestant %s", c.name)
}

// sleepUntil sleeps until t.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// measure runs c on w: start-up and warm-up, the window, a drain. A
// round-trips measurement (rt) has a window of its own, o.RTWindow, long
// enough to hold every periodic read, and counts the store's requests; a
// dispatch one counts none, so that counting costs its figures nothing.
func (e *env) measure(ctx context.Context, o *Options, c contestant, w workload, rt bool) (m measurement) {
	window := o.Window
	if rt {
		window = o.RTWindow
	}
	m = measurement{w: w, c: c, rt: rt, window: window, loadB: loadAvg()}
	defer func() { m.loadA = loadAvg() }()
	what := "window"
	if rt {
		what = "round trips, window"
	}
	fmt.Fprintf(os.Stderr, "slotbench: %s, %s: %s %v ...\n", c.name, w, what, window)

	t0 := time.Now().Add(o.Warmup).Truncate(time.Second).Add(time.Second)
	t1 := t0.Add(window)
	rec := newRecorder(w, t0.Unix(), t1.Unix())

	var pg0 int64
	if rt && c.kind == kindPostgres {
		if _, err := e.pgDSN(); err != nil {
			m.err = err
			return m
		}
		var err error
		if pg0, err = e.pgTransactions(ctx); err != nil {
			m.err = err
			return m
		}
	}
	e.lastWarnings, e.lastStop = 0, 0
	stop, err := e.start(ctx, c, w, rec)
	if err != nil {
		m.err = err
		return m
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	var mon *redisMonitor
	if rt && c.kind == kindRedis {
		mon, m.err = e.monitorRedis(ctx, t0, t1)
	}
	sleepUntil(t0)
	p0, n0 := takeProbe(), rec.total.Load()
	var ec0 etcdCounts
	if rt && c.kind == kindEtcd && m.err == nil {
		ec0, m.err = e.etcdRequests(ctx)
	}
	sleepUntil(t1)
	p1, n1 := takeProbe(), rec.total.Load()
	if mon != nil {
		m.redis = mon.stop()
		m.trips, m.tripStarts = m.redis.commands, n1-n0
	}
	if rt && c.kind == kindEtcd && m.err == nil {
		var ec1 etcdCounts
		ec1, m.err = e.etcdRequests(ctx)
		m.etcd = ec1.minus(ec0)
		m.trips, m.tripStarts = m.etcd.requests, n1-n0
	}
	m.cpu, m.mallocs, m.starts = p1.cpu-p0.cpu, p1.mallocs-p0.mallocs, n1-n0

	// Late starts of the window's slots still count: wait for them, up to
	// the drain.
	for end := time.Now().Add(o.Drain); time.Now().Before(end) && rec.distinct() < rec.w.expected(rec.t0, rec.t1); {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	stopped = true
	m.warnings, m.stop = e.lastWarnings, e.lastStop
	m.out = rec.outcome()
	if rt && c.kind == kindPostgres && m.err == nil {
		time.Sleep(1500 * time.Millisecond) // backends report their counts at exit, and within a second
		var pg1 int64
		pg1, m.err = e.pgTransactions(ctx)
		m.trips, m.tripStarts = pg1-pg0, rec.total.Load()
	}
	return m
}

// item is one workload and the contestants measured on it, in a
// dispatch measurement or (rt) a round-trips one.
type item struct {
	w  workload
	rt bool
	cs []contestant
}

// plan lists the workloads and, for each, the contestants the chosen
// sections need, in the order they run within a round: the dispatch and
// cost measurements, then the round-trips ones.
func plan(o *Options) []item {
	all := contestants(o)
	var out []item
	add := func(w workload, rt bool, want func(contestant) bool) {
		for i := range out {
			if out[i].w == w && out[i].rt == rt {
				for _, c := range all {
					if want(c) && !containsC(out[i].cs, c) {
						out[i].cs = append(out[i].cs, c)
					}
				}
				out[i].cs = ordered(all, out[i].cs)
				return
			}
		}
		var cs []contestant
		for _, c := range all {
			if want(c) {
				cs = append(cs, c)
			}
		}
		if len(cs) > 0 {
			out = append(out, item{w: w, rt: rt, cs: cs})
		}
	}
	every := func(c contestant) bool { return true }
	if o.has(secDispatch) {
		for _, n := range o.SpreadSizes {
			add(workload{jobs: n}, false, every)
		}
		if o.EveryJobs > 0 {
			add(workload{jobs: o.EveryJobs, everySecond: true}, false, every)
		}
	}
	if o.has(secCPU) {
		add(workload{jobs: 1000, everySecond: true}, false, func(c contestant) bool { return c.peer || c.kind == kindMemory })
	}
	if o.has(secRoundTrips) {
		remote := func(c contestant) bool { return c.kind == kindRedis || c.kind == kindPostgres || c.kind == kindEtcd }
		add(workload{jobs: o.RTJobs}, true, remote)
		add(workload{jobs: 1000, everySecond: true}, true, remote)
	}
	return out
}

func containsC(cs []contestant, c contestant) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// ordered returns the members of sub in the order of all.
func ordered(all, sub []contestant) []contestant {
	var out []contestant
	for _, c := range all {
		if containsC(sub, c) {
			out = append(out, c)
		}
	}
	return out
}
