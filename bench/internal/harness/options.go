package harness

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options are the harness's flags.
type Options struct {
	Sections    []string
	Rounds      int
	Window      time.Duration
	Warmup      time.Duration
	Drain       time.Duration
	SpreadSizes []int
	EveryJobs   int
	RTJobs      int
	RTWindow    time.Duration
	Stores      []string
	Peers       []string

	ConstructJobs int

	ArbDuration time.Duration
	ArbBatch    int
	ArbClients  int
	RedisBenchN int

	SchedSizes   []int
	SchedStores  []string
	SchedWindow  time.Duration
	SchedProfile string
	SchedYAML    bool
	SchedHourly  bool

	OverloadJobs       int
	OverloadWindow     time.Duration
	OverloadMaxRunning int
	// OverloadProfile, when set, is the prefix of the overload section's
	// profiles: PREFIX-cpu.pprof and PREFIX-mutex.pprof over the whole
	// measurement, and PREFIX-heap.pprof at the drain's end, before Run is
	// cancelled.
	OverloadProfile string

	Out string
}

// Sections, in the order they report.
const (
	secDispatch    = "dispatch"
	secConstruct   = "construct"
	secCPU         = "cpu"
	secRoundTrips  = "roundtrips"
	secArbitration = "arbitration"
	secSchedules   = "schedules"
	secOverload    = "overload"
)

var allSections = []string{secDispatch, secConstruct, secCPU, secRoundTrips, secArbitration, secSchedules, secOverload}

// defaultSections leave out schedules, which puts and loads 100k schedules
// per store, and overload, whose 100k every-second jobs take a few GB of
// memory and both cores for minutes: ask for them with -sections.
var defaultSections = []string{secDispatch, secConstruct, secCPU, secRoundTrips, secArbitration}

// slotcron contestants, by the -stores names.
var allStores = []string{"memory", "sqlite", "redis", "redis3", "postgres", "etcd", "etcd3"}
var allPeers = []string{"robfig", "gocron", "timer"}

// Parse reads the flags in args.
func Parse(args []string) (*Options, error) {
	fs := flag.NewFlagSet("slotbench", flag.ContinueOnError)
	o := &Options{}
	sections := fs.String("sections", strings.Join(defaultSections, ","), "sections to run: "+strings.Join(allSections, ",")+" (schedules and overload only when named)")
	fs.IntVar(&o.Rounds, "rounds", 3, "times each measurement is repeated, interleaved with the others")
	fs.DurationVar(&o.Window, "window", 3*time.Minute, "measured window of each dispatch measurement")
	fs.DurationVar(&o.Warmup, "warmup", 10*time.Second, "time from start to the window, not measured (start-up work that overruns it shows as missing slots)")
	fs.DurationVar(&o.Drain, "drain", 30*time.Second, "longest wait after the window for late starts of its slots (it ends as soon as every slot started)")
	sizes := fs.String("sizes", "1000,10000,100000", "job counts of the spread workload (job i at second i%60 of every minute)")
	fs.IntVar(&o.EveryJobs, "every-jobs", 1000, "job count of the every-second workload; 0 leaves it out of dispatch")
	fs.IntVar(&o.RTJobs, "rt-jobs", 1000, "job count of the spread workload in the round-trips section")
	fs.DurationVar(&o.RTWindow, "rt-window", 61*time.Second, "measured window of each round-trips measurement: at least 61s, so that it holds every read a replica makes once a minute")
	stores := fs.String("stores", strings.Join(allStores, ","), "slotcron stores: "+strings.Join(allStores, ",")+" (redis3, etcd3: three replicas)")
	peers := fs.String("peers", strings.Join(allPeers, ","), "peers: "+strings.Join(allPeers, ","))
	fs.IntVar(&o.ConstructJobs, "construct-jobs", 100000, "jobs registered in the construction section")
	fs.DurationVar(&o.ArbDuration, "arb-duration", 10*time.Second, "length of each arbitration measurement")
	fs.IntVar(&o.ArbBatch, "arb-batch", 1000, "slots per claim batch (and rows per INSERT) in the arbitration section")
	fs.IntVar(&o.ArbClients, "arb-clients", 3, "contending clients in the arbitration section")
	fs.IntVar(&o.RedisBenchN, "redis-benchmark-n", 1000000, "requests of redis-benchmark -t set -c 50 -n N -q, the Redis baseline (enough that its start-up does not weigh: about 10 s at 100k/s)")
	schedSizes := fs.String("schedule-sizes", "100000", "schedules section: counts of stored schedules (schedule i at second i%60, as the spread workload); the full form is 100000,1000000")
	schedStores := fs.String("schedule-stores", "memory,redis3,postgres", "schedules section: stores ("+strings.Join(allStores, ",")+"); redis is one replica, for the 1M carry figure")
	fs.DurationVar(&o.SchedWindow, "schedule-window", time.Minute, "schedules section: measured window of each measurement (it starts -warmup after Run)")
	fs.BoolVar(&o.SchedYAML, "schedule-yaml", true, "schedules section: measure as many YAML jobs on the same store beside each (false: schedules only, to save time at 1M)")
	fs.BoolVar(&o.SchedHourly, "schedule-hourly", false, "schedules section: spread the schedules over the hour (schedule i at second i%3600 of every hour: 1M schedules make 278 slots a second) rather than over the minute")
	fs.StringVar(&o.SchedProfile, "schedule-cpuprofile", "", "schedules section: write a CPU profile of each start-up (Run → every replica's first run and the end of its start-up) to PREFIX-<store>-<yaml|schedules>-<n>.pprof")
	fs.IntVar(&o.OverloadJobs, "overload-jobs", 100000, "overload section: jobs due every second, on memstore")
	fs.DurationVar(&o.OverloadWindow, "overload-window", time.Minute, "overload section: measured window (it starts -warmup after Run; the drain after it lasts the starting deadline and 5 s, or -drain if longer)")
	fs.IntVar(&o.OverloadMaxRunning, "overload-max-running", 0, "overload section: max_running, the cap on runs in flight (0: the default)")
	fs.StringVar(&o.OverloadProfile, "overload-profile", "", "overload section: write CPU and mutex profiles of the measurement to PREFIX-cpu.pprof and PREFIX-mutex.pprof, and a heap profile at the drain's end to PREFIX-heap.pprof")
	fs.StringVar(&o.Out, "out", "", "also write the report to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if o.Sections, err = pick(*sections, allSections, "section"); err != nil {
		return nil, err
	}
	if o.Stores, err = pick(*stores, allStores, "store"); err != nil {
		return nil, err
	}
	if o.Peers, err = pick(*peers, allPeers, "peer"); err != nil {
		return nil, err
	}
	if o.SchedStores, err = pick(*schedStores, allStores, "store"); err != nil {
		return nil, err
	}
	if o.SchedSizes, err = counts(*schedSizes, "-schedule-sizes"); err != nil {
		return nil, err
	}
	for f := range strings.SplitSeq(*sizes, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-sizes: bad job count %q", f)
		}
		o.SpreadSizes = append(o.SpreadSizes, n)
	}
	if o.OverloadJobs < 1 || o.OverloadWindow < time.Second || o.OverloadMaxRunning < 0 {
		return nil, fmt.Errorf("-overload-jobs must be positive, -overload-window at least 1s, -overload-max-running not negative")
	}
	if o.SchedWindow < time.Second {
		return nil, fmt.Errorf("-schedule-window must be at least 1s")
	}
	if o.Rounds < 1 || o.Window < time.Second || o.ArbBatch < 1 || o.ArbClients < 1 {
		return nil, fmt.Errorf("-rounds, -arb-batch and -arb-clients must be positive, -window at least 1s")
	}
	if o.RTWindow < 61*time.Second {
		return nil, fmt.Errorf("-rt-window must be at least 61s, to hold every once-a-minute read")
	}
	return o, nil
}

func pick(list string, known []string, what string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", what, f, strings.Join(known, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

func (o *Options) has(section string) bool { return slices.Contains(o.Sections, section) }

func counts(list, flag string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || n > 1000000 {
			return nil, fmt.Errorf("%s: bad count %q (1 to 1000000)", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}
