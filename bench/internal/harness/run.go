// Package harness measures slotcron beside robfig/cron v3, gocron v2 and a
// plain time.AfterFunc per job, interleaved and repeated in one run, and
// reports one markdown table. cmd/slotbench is its command line; the
// README in bench/ says what each figure means and how it is approximated.
package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// results holds every measurement of a run.
type results struct {
	dispatch     []measurement
	construction []construction
	arbitration  []arbitration
	schedules    []schedMeasurement
	overload     []overload
}

// Run runs the chosen sections o.Rounds times, interleaved, and writes the
// report to w (and to o.Out).
func Run(ctx context.Context, o *Options, w io.Writer) error {
	e, err := newEnv()
	if err != nil {
		return err
	}
	defer e.close()
	started := time.Now()
	loadStart := loadAvg()
	var res results
	items := plan(o)
	for round := 1; round <= o.Rounds; round++ {
		fmt.Fprintf(os.Stderr, "slotbench: round %d of %d\n", round, o.Rounds)
		for _, it := range items {
			for _, c := range it.cs {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res.dispatch = append(res.dispatch, e.measure(ctx, o, c, it.w, it.rt))
			}
		}
		if o.has(secConstruct) {
			for _, name := range append([]string{"slotcron"}, o.Peers...) {
				fmt.Fprintf(os.Stderr, "slotbench: construct %s, %d jobs\n", name, o.ConstructJobs)
				res.construction = append(res.construction, construct(name, o.ConstructJobs))
			}
		}
		if o.has(secSchedules) {
			for _, n := range o.SchedSizes {
				for _, c := range storeContestants(o.SchedStores) {
					for _, yaml := range []bool{true, false} {
						if yaml && !o.SchedYAML {
							continue
						}
						if ctx.Err() != nil {
							return ctx.Err()
						}
						res.schedules = append(res.schedules, e.measureSchedules(ctx, o, c, n, yaml))
					}
				}
			}
		}
		if o.has(secOverload) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.overload = append(res.overload, e.measureOverload(ctx, o))
		}
		if o.has(secArbitration) {
			for _, s := range o.Stores {
				if s == "redis3" || s == "etcd3" {
					continue
				}
				fmt.Fprintf(os.Stderr, "slotbench: arbitration %s\n", s)
				res.arbitration = append(res.arbitration, e.arbitrate(ctx, o, storeKind(s)))
				switch storeKind(s) {
				case kindRedis:
					res.arbitration = append(res.arbitration, e.redisBenchmark(ctx, o))
				case kindPostgres:
					res.arbitration = append(res.arbitration, e.pgInsert(ctx, o))
				case kindEtcd:
					res.arbitration = append(res.arbitration, e.etcdTxn(ctx, o))
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "slotbench %s · %s · %d CPUs (GOMAXPROCS %d) · %s/%s",
		started.UTC().Format(time.RFC3339), runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	if v := e.versions(); v != "" {
		fmt.Fprintf(&b, " · %s", v)
	}
	// The dispatch window and drain only where the dispatch section ran:
	// the other sections print their own.
	window := ""
	if o.has(secDispatch) {
		window = fmt.Sprintf(" · window %v · drain %v", o.Window, o.Drain)
	}
	fmt.Fprintf(&b, "\n\nrounds %d%s · warm-up %v · load1 %s at start, %s at end · took %v\n\n",
		o.Rounds, window, o.Warmup, loadStart, loadAvg(), time.Since(started).Round(time.Second))
	if o.has(secSchedules) {
		fmt.Fprintf(&b, "schedules section: sizes %v · stores %s · window %v · drain %v (warm-up as above)\n\n",
			o.SchedSizes, strings.Join(o.SchedStores, ","), o.SchedWindow, o.Drain)
	}
	if o.has(secOverload) {
		fmt.Fprintf(&b, "overload section: %d jobs every second on memstore · window %v (warm-up as above)\n\n",
			o.OverloadJobs, o.OverloadWindow)
	}
	report(&b, o, &res)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if o.Out != "" {
		return os.WriteFile(o.Out, []byte(b.String()), 0o644)
	}
	return nil
}
