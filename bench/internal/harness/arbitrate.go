package harness

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
)

// arbitration is the ceiling of one store: clients contending for the same
// batches of fresh slots, or a baseline on the same server.
type arbitration struct {
	name    string
	err     error
	perSec  float64 // slots (rows, SETs) decided per second
	decided int64
	bad     string // a broken exactly-once, if any
	checked bool   // every slot (key) decided was checked to be won exactly once
	command string // a baseline run as a command: the command line
	loadB   string
	loadA   string
}

// arbitrate lets o.ArbClients clients, one replica name each, claim the
// same batches of o.ArbBatch fresh slots (one slot of each of ArbBatch
// jobs per batch) through the slotstore API for o.ArbDuration, and counts
// the slots won: each exactly once.
func (e *env) arbitrate(ctx context.Context, o *Options, kind storeKind) (a arbitration) {
	a = arbitration{name: "slotcron/" + string(kind), checked: true, loadB: loadAvg()}
	defer func() { a.loadA = loadAvg() }()
	e.seq++
	ns := fmt.Sprintf("sa%d_%d", time.Now().Unix()%100000, e.seq)
	if kind == kindEtcd {
		defer e.etcdDrop(ns + "/") // after the stores close
	}
	var stores []slotstore.Store
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	for i := range o.ArbClients {
		if kind == kindMemory && i > 0 { // in-process: the clients share it
			stores = append(stores, stores[0])
			continue
		}
		s, _, err := e.openStore(ctx, kind, ns)
		if err != nil {
			a.err = err
			return a
		}
		stores = append(stores, s)
	}
	if kind == kindMemory {
		defer func() { stores = stores[:1] }()
	}
	names := make([]string, o.ArbBatch)
	for j := range names {
		names[j] = fmt.Sprintf("a%06d", j)
	}
	if _, err := stores[0].Enroll(ctx, slotstore.EnrollParams{Jobs: names}); err != nil {
		a.err = fmt.Errorf("enroll: %w", err)
		return a
	}
	base := time.Now().Truncate(time.Second).Add(time.Minute)
	batch := func(b int) []slotstore.ClaimRequest {
		reqs := make([]slotstore.ClaimRequest, len(names))
		slot := base.Add(time.Duration(b) * time.Second)
		for j, n := range names {
			reqs[j] = slotstore.ClaimRequest{Job: n, Slot: slot, Lease: time.Minute}
		}
		return reqs
	}
	wins := make([][]int, o.ArbClients) // per client, per batch
	errs := make([]error, o.ArbClients)
	start := time.Now()
	deadline := start.Add(o.ArbDuration)
	var wg sync.WaitGroup
	for c := range o.ArbClients {
		wg.Go(func() {
			for b := 0; time.Now().Before(deadline); b++ {
				res, err := stores[c].Claim(ctx, slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", c+1), Requests: batch(b)})
				if err != nil {
					errs[c] = err
					return
				}
				n := 0
				for _, r := range res {
					if r.Status == slotstore.Won {
						n++
					}
				}
				wins[c] = append(wins[c], n)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			a.err = fmt.Errorf("claim: %w", err)
			return a
		}
	}
	a.decided, a.bad = tally(wins, o.ArbBatch)
	a.perSec = float64(a.decided) / elapsed.Seconds()
	return a
}

// tally sums wins, each client's wins per batch of size slots, and checks
// them: every batch all clients finished must have exactly size wins, a
// batch only some finished at most that. bad describes the last batch
// that broke this, or is empty.
func tally(wins [][]int, size int) (decided int64, bad string) {
	all := len(wins[0])
	most := 0
	for _, w := range wins {
		all, most = min(all, len(w)), max(most, len(w))
	}
	for b := range most {
		n := 0
		for _, w := range wins {
			if b < len(w) {
				n += w[b]
			}
		}
		decided += int64(n)
		if n > size || (b < all && n != size) {
			bad = fmt.Sprintf("batch %d: %d wins of %d", b, n, size)
		}
	}
	return decided, bad
}

var setRate = regexp.MustCompile(`SET: ([0-9.]+) requests per second`)

// redisBenchmark runs redis-benchmark -t set -c 50 -n o.RedisBenchN -q
// against the private server, as anyone would from a shell: the baseline
// of the Redis arbitration figure, taken in the same run.
func (e *env) redisBenchmark(ctx context.Context, o *Options) (a arbitration) {
	a = arbitration{name: "redis-benchmark SET -c 50", loadB: loadAvg()}
	defer func() { a.loadA = loadAvg() }()
	addr, err := e.redisAddr()
	if err != nil {
		a.err = err
		return a
	}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		a.err = fmt.Errorf("not installed: redis-benchmark (package redis-tools)")
		return a
	}
	host, port, _ := strings.Cut(addr, ":")
	args := []string{"-h", host, "-p", port, "-t", "set", "-c", "50", "-n", strconv.Itoa(o.RedisBenchN), "-q"}
	a.command = "redis-benchmark " + strings.Join(args, " ")
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		a.err = fmt.Errorf("redis-benchmark: %v: %s", err, out)
		return a
	}
	m := setRate.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		a.err = fmt.Errorf("redis-benchmark: no rate in %q", out)
		return a
	}
	a.perSec, _ = strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	a.decided = int64(o.RedisBenchN)
	return a
}

// pgInsert lets o.ArbClients connections insert the same batches of
// o.ArbBatch rows, one INSERT … ON CONFLICT DO NOTHING each, into a
// scratch table for o.ArbDuration, and counts rows inserted.
func (e *env) pgInsert(ctx context.Context, o *Options) (a arbitration) {
	a = arbitration{name: "postgres INSERT … ON CONFLICT DO NOTHING", loadB: loadAvg()}
	defer func() { a.loadA = loadAvg() }()
	dsn, err := e.pgDSN()
	if err != nil {
		a.err = err
		return a
	}
	e.seq++
	table := fmt.Sprintf("scratch_%d_%d", time.Now().Unix()%100000, e.seq)
	if err := e.pgExec(dsn, "CREATE TABLE "+table+" (job int, slot bigint, holder text, PRIMARY KEY (job, slot))"); err != nil {
		a.err = err
		return a
	}
	defer e.pgExec(dsn, "DROP TABLE "+table)
	sql := "INSERT INTO " + table + " (job, slot, holder) SELECT g, $1, $2 FROM generate_series(0, $3::int - 1) g ON CONFLICT DO NOTHING"
	conns := make([]*pgx.Conn, o.ArbClients)
	for i := range conns {
		if conns[i], err = pgx.Connect(ctx, dsn); err != nil {
			a.err = err
			return a
		}
		defer conns[i].Close(context.Background())
	}
	rows := make([]int64, len(conns))
	errs := make([]error, len(conns))
	start := time.Now()
	deadline := start.Add(o.ArbDuration)
	var wg sync.WaitGroup
	for c, conn := range conns {
		wg.Go(func() {
			for b := int64(0); time.Now().Before(deadline); b++ {
				tag, err := conn.Exec(ctx, sql, b, fmt.Sprintf("r%d", c+1), o.ArbBatch)
				if err != nil {
					errs[c] = err
					return
				}
				rows[c] += tag.RowsAffected()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			a.err = err
			return a
		}
	}
	for _, r := range rows {
		a.decided += r
	}
	a.perSec = float64(a.decided) / elapsed.Seconds()
	return a
}
