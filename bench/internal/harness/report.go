package harness

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// row is one line of the report's table.
type row struct {
	section, workload, who, figure, value, vs, notes, load string
}

func report(b *strings.Builder, o *Options, res *results) {
	var rows []row
	if o.has(secDispatch) {
		rows = append(rows, dispatchRows(o, res)...)
	}
	if o.has(secConstruct) {
		rows = append(rows, constructRows(res)...)
	}
	if o.has(secCPU) {
		rows = append(rows, cpuRows(res)...)
	}
	if o.has(secRoundTrips) {
		rows = append(rows, tripRows(o, res)...)
	}
	if o.has(secArbitration) {
		rows = append(rows, arbRows(res)...)
	}
	if o.has(secSchedules) {
		rows = append(rows, schedRows(o, res)...)
	}
	if o.has(secOverload) {
		rows = append(rows, overloadRows(res)...)
	}
	b.WriteString("| § | workload | scheduler | figure | value | vs peers, same run | notes | load1 before→after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.section, r.workload, r.who, r.figure, r.value, r.vs, r.notes, r.load)
	}
}

// pooled is the measurements of one contestant on one workload, summed
// over rounds.
type pooled struct {
	c                  contestant
	err                error
	out                outcome
	cpu                time.Duration
	mallocs            uint64
	starts             int64
	trips, tripStarts  int64
	redis              redisCounts
	etcd               etcdCounts
	window             time.Duration
	warnings           int64
	stop               time.Duration // the longest
	loads              []string
	p50, p99, maxLate  time.Duration
	haveLateness, okay bool
}

// pool pools the dispatch measurements of w, or (rt) its round-trips
// measurements.
func pool(res *results, w workload, rt bool) []*pooled {
	var out []*pooled
	by := map[string]*pooled{}
	for _, m := range res.dispatch {
		if m.w != w || m.rt != rt {
			continue
		}
		p := by[m.c.name]
		if p == nil {
			p = &pooled{c: m.c}
			by[m.c.name] = p
			out = append(out, p)
		}
		p.loads = append(p.loads, m.loadB+"→"+m.loadA)
		if m.err != nil {
			p.err = m.err
			continue
		}
		p.okay = true
		p.out.expected += m.out.expected
		p.out.started += m.out.started
		p.out.duplicates += m.out.duplicates
		p.out.missing += m.out.missing
		p.out.unexpected += m.out.unexpected
		p.out.late = append(p.out.late, m.out.late...)
		p.out.gaps = append(p.out.gaps, m.out.gaps...)
		p.cpu += m.cpu
		p.mallocs += m.mallocs
		p.starts += m.starts
		p.trips += m.trips
		p.tripStarts += m.tripStarts
		p.redis = p.redis.plus(m.redis)
		p.window = m.window
		p.etcd = p.etcd.plus(m.etcd)
		p.warnings += m.warnings
		p.stop = max(p.stop, m.stop)
	}
	for _, p := range out {
		slices.Sort(p.out.late)
		if len(p.out.late) > 0 {
			p.haveLateness = true
			p.p50, p.p99 = quantile(p.out.late, 0.50), quantile(p.out.late, 0.99)
			p.maxLate = p.out.late[len(p.out.late)-1]
		}
	}
	return out
}

// workloads lists the distinct workloads of the dispatch measurements, in
// run order.
func workloads(res *results) []workload {
	var ws []workload
	for _, m := range res.dispatch {
		if !m.rt && !slices.Contains(ws, m.w) {
			ws = append(ws, m.w)
		}
	}
	return ws
}

// vsPeers compares f(p) with f of each peer measured on the same workload.
func vsPeers(ps []*pooled, p *pooled, f func(*pooled) float64, label string) string {
	var parts []string
	for _, q := range ps {
		if !q.c.peer || q == p || !q.okay {
			continue
		}
		parts = append(parts, q.c.name+" "+ratio(f(p), f(q)))
	}
	if len(parts) == 0 || !p.okay {
		return "–"
	}
	return label + strings.Join(parts, " · ")
}

func skipped(err error) string {
	return "skipped: " + strings.ReplaceAll(strings.SplitN(err.Error(), "\n", 2)[0], "|", "/")
}

func dispatchRows(o *Options, res *results) []row {
	var rows []row
	for _, w := range workloads(res) {
		if !w.everySecond && !slices.Contains(o.SpreadSizes, w.jobs) || w.everySecond && w.jobs != o.EveryJobs {
			continue
		}
		ps := pool(res, w, false)
		for _, p := range ps {
			r := row{section: "1 dispatch", workload: w.String(), who: p.c.name, figure: "lateness p50 · p99 · max (ms)",
				load: strings.Join(p.loads, "; ")}
			switch {
			case !p.okay:
				r.value = skipped(p.err)
			case !p.haveLateness:
				r.value = "no slot started"
			default:
				r.value = ms(p.p50) + " · " + ms(p.p99) + " · " + ms(p.maxLate)
				r.vs = vsPeers(ps, p, func(q *pooled) float64 { return float64(q.p99) }, "p99: ")
			}
			if p.okay {
				r.notes = fmt.Sprintf("started %d / expected %d · duplicates %d · missing %d", p.out.started, p.out.expected, p.out.duplicates, p.out.missing)
				if len(p.out.gaps) > 0 {
					r.notes += " (seconds of the window short: " + strings.Join(p.out.gaps, ", ") + ")"
				}
				if p.out.unexpected > 0 {
					r.notes += fmt.Sprintf(" · off-schedule %d", p.out.unexpected)
				}
				if p.stop > 0 {
					r.notes += fmt.Sprintf(" · Run returned %s after cancel", p.stop.Round(time.Millisecond))
				}
				if p.warnings > 0 {
					r.notes += fmt.Sprintf(" · %d warnings logged", p.warnings)
				}
			}
			if r.vs == "" {
				r.vs = "–"
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func cpuRows(res *results) []row {
	w := workload{jobs: 1000, everySecond: true}
	var ps []*pooled
	for _, p := range pool(res, w, false) {
		if p.c.peer || p.c.kind == kindMemory {
			ps = append(ps, p)
		}
	}
	cpu := func(q *pooled) float64 { return float64(q.cpu) / float64(max(q.starts, 1)) }
	allocs := func(q *pooled) float64 { return float64(q.mallocs) / float64(max(q.starts, 1)) }
	var rows []row
	for _, p := range ps {
		r := row{section: "3 cost", workload: w.String(), who: p.c.name, figure: "CPU µs · allocations, per slot started",
			load: strings.Join(p.loads, "; "), vs: "–"}
		if !p.okay {
			r.value = skipped(p.err)
		} else {
			r.value = num(cpu(p)/1e3) + " µs · " + num(allocs(p))
			r.vs = vsPeers(ps, p, cpu, "CPU: ") + "; allocs: " + strings.TrimPrefix(vsPeers(ps, p, allocs, ""), "–")
			r.notes = fmt.Sprintf("%d starts in the window; process CPU (getrusage), MemStats.Mallocs", p.starts)
		}
		rows = append(rows, r)
	}
	return rows
}

func tripRows(o *Options, res *results) []row {
	var rows []row
	remote := func(p *pooled) bool {
		return p.c.kind == kindRedis || p.c.kind == kindPostgres || p.c.kind == kindEtcd
	}
	perSlot := func(p *pooled) float64 {
		return float64(p.trips) / float64(p.tripStarts) / float64(p.c.replicas)
	}
	for _, w := range []workload{{jobs: o.RTJobs}, {jobs: 1000, everySecond: true}} {
		ps := pool(res, w, true)
		for _, p := range ps {
			if !remote(p) {
				continue
			}
			r := row{section: "4 round trips", workload: w.String(), who: p.c.name, figure: "store round trips per slot per replica",
				load: strings.Join(p.loads, "; "), vs: "–"}
			switch {
			case !p.okay:
				r.value = skipped(p.err)
			case p.tripStarts == 0:
				r.value = "no slot started"
			default:
				per := func(n int64) string { return num(float64(n) / float64(p.tripStarts) / float64(p.c.replicas)) }
				r.value = per(p.trips)
				// Against the other stores with as many replicas: their
				// units differ (commands, transactions, requests).
				var vs []string
				for _, q := range ps {
					if q != p && remote(q) && q.okay && q.tripStarts > 0 && q.c.replicas == p.c.replicas {
						vs = append(vs, q.c.name+" "+ratio(perSlot(p), perSlot(q)))
					}
				}
				if len(vs) > 0 {
					r.vs = strings.Join(vs, " · ")
				}
				switch p.c.kind {
				case kindRedis:
					d := p.redis
					r.figure = "Redis commands received per slot per replica"
					r.notes = fmt.Sprintf("%d commands clients sent (MONITOR, server timestamps in the %v window) / %d starts in the window / %d replicas; per slot per replica: %s; %s round trips with each MULTI…EXEC block (%s a slot) one; scripts ran %s commands more inside the server",
						p.trips, p.window, p.tripStarts, p.c.replicas, d.top(6, per), per(d.roundTrips()), per(d.blocks), per(d.inner))
				case kindEtcd:
					d := p.etcd
					r.figure = "etcd gRPC requests per slot per replica"
					r.notes = fmt.Sprintf("%d requests (grpc_server_msg_received_total of the 3 members: unary calls and stream messages, in the %v window) / %d starts in the window / %d replicas; per slot per replica: Txn %s · Range %s · Put/Delete %s · Lease %s · Watch %s · other %s; raft proposals committed (writes) %s",
						p.trips, p.window, p.tripStarts, p.c.replicas, per(d.txn), per(d.rng), per(d.put), per(d.lease), per(d.watch),
						per(d.requests-d.txn-d.rng-d.put-d.lease-d.watch), per(d.proposals))
					if d.leaderChanges > 0 {
						r.notes += fmt.Sprintf(" · %d leader changes in the window", d.leaderChanges)
					}
				default:
					r.figure = "Postgres transactions per slot per replica"
					r.notes = fmt.Sprintf("%d transactions (pg_stat_database xact_commit+xact_rollback, start-up to shutdown) / %d starts / %d replicas", p.trips, p.tripStarts, p.c.replicas)
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func median[T any](xs []T, key func(T) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = key(x)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

func constructRows(res *results) []row {
	by := map[string][]construction{}
	var names []string
	for _, c := range res.construction {
		if _, ok := by[c.name]; !ok {
			names = append(names, c.name)
		}
		by[c.name] = append(by[c.name], c)
	}
	per := func(name string) (float64, float64, bool) {
		var ok []construction
		for _, c := range by[name] {
			if c.err == nil {
				ok = append(ok, c)
			}
		}
		if len(ok) == 0 {
			return 0, 0, false
		}
		return median(ok, func(c construction) float64 { return float64(c.perJob) }),
			median(ok, func(c construction) float64 { return c.heapPer }), true
	}
	var rows []row
	for _, name := range names {
		cs := by[name]
		var loads []string
		var err error
		for _, c := range cs {
			loads = append(loads, c.loadB+"→"+c.loadA)
			if c.err != nil {
				err = c.err
			}
		}
		r := row{section: "2 construction", workload: "register the jobs", who: name, figure: "time · live heap, per job (median of rounds)",
			load: strings.Join(loads, "; "), vs: "–"}
		t, h, ok := per(name)
		if !ok {
			r.value = skipped(err)
			rows = append(rows, r)
			continue
		}
		r.value = num(t/1e3) + " µs · " + bytesPerJob(h)
		var parts []string
		for _, peer := range names {
			if peer == name || peer == "slotcron" {
				continue
			}
			if pt, ph, ok := per(peer); ok {
				parts = append(parts, fmt.Sprintf("%s time %s, heap %s", peer, ratio(t, pt), ratio(h, ph)))
			}
		}
		if len(parts) > 0 {
			r.vs = strings.Join(parts, " · ")
		}
		if name == "slotcron" {
			cfg := median(cs, func(c construction) float64 { return c.configPer })
			r.notes = fmt.Sprintf("time: scheduler.New on a Config built beforehand; heap: all the Scheduler keeps after New, what it keeps of the Config included (the Config built holds %s per job)", bytesPerJob(cfg))
		}
		rows = append(rows, r)
	}
	return rows
}

func arbRows(res *results) []row {
	by := map[string][]arbitration{}
	var names []string
	for _, a := range res.arbitration {
		if _, ok := by[a.name]; !ok {
			names = append(names, a.name)
		}
		by[a.name] = append(by[a.name], a)
	}
	rate := func(name string) (float64, error) {
		var ok []arbitration
		var err error
		for _, a := range by[name] {
			if a.err == nil {
				ok = append(ok, a)
			} else {
				err = a.err
			}
		}
		if len(ok) == 0 {
			return 0, err
		}
		return median(ok, func(a arbitration) float64 { return a.perSec }), nil
	}
	baseline := map[string]string{
		"slotcron/redis":    "redis-benchmark SET -c 50",
		"slotcron/postgres": "postgres INSERT … ON CONFLICT DO NOTHING",
		"slotcron/etcd":     etcdTxnName,
	}
	var rows []row
	for _, name := range names {
		as := by[name]
		var loads, bad []string
		var decided int64
		checked := false
		for _, a := range as {
			checked = checked || a.checked
			loads = append(loads, a.loadB+"→"+a.loadA)
			decided += a.decided
			if a.bad != "" {
				bad = append(bad, a.bad)
			}
		}
		r := row{section: "5 arbitration", workload: "3 clients, same batches of fresh slots", who: name, figure: "slots decided per second (median of rounds)",
			load: strings.Join(loads, "; "), vs: "–"}
		if strings.HasPrefix(name, "redis-benchmark") {
			r.workload, r.figure = "50 clients", "SET per second (median of rounds)"
		} else if strings.HasPrefix(name, "postgres") {
			r.workload, r.figure = "3 clients, same batches of rows", "rows decided per second, 1 statement a batch (median of rounds)"
		} else if name == etcdTxnName {
			r.workload = "3 clients, same batches of keys"
			r.figure = fmt.Sprintf("keys decided per second, 1 Txn per %d keys, all or none (median of rounds)", etcdTxnKeys)
		}
		v, err := rate(name)
		if err != nil {
			r.value = skipped(err)
			rows = append(rows, r)
			continue
		}
		r.value = num(v)
		var vs []string
		if base, ok := baseline[name]; ok {
			if bv, err := rate(base); err == nil && bv > 0 {
				vs = append(vs, base+" "+ratio(v, bv))
			}
			// The stores on a server, against each other.
			for _, other := range names {
				if _, remote := baseline[other]; remote && other != name {
					if ov, err := rate(other); err == nil && ov > 0 {
						vs = append(vs, other+" "+ratio(v, ov))
					}
				}
			}
		}
		if len(vs) > 0 {
			r.vs = strings.Join(vs, " · ")
		}
		r.notes = fmt.Sprintf("%d decided in all rounds", decided)
		if cmd := as[len(as)-1].command; cmd != "" {
			r.notes = fmt.Sprintf("%d requests in all rounds · `%s`", decided, cmd)
		}
		if checked {
			what := "slot"
			if name == etcdTxnName {
				what = "key"
			}
			if len(bad) > 0 {
				r.notes += " · EXACTLY-ONCE BROKEN: " + strings.Join(bad, "; ")
			} else {
				r.notes += " · every " + what + " won exactly once"
			}
		}
		rows = append(rows, r)
	}
	return rows
}
