package scheduler

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// Validate checks cfg against reg and returns every problem, each naming
// file, line and key, in file order. It returns nil when cfg is good.
func (c *Config) Validate(reg *jobs.Registry) error {
	_, _, err := c.resolve(reg)
	return err
}

// resolve validates the configuration and builds the job and duty plans.
func (c *Config) resolve(reg *jobs.Registry) ([]engine.JobSpec, []engine.DutySpec, error) {
	return c.resolveContext(context.Background(), reg)
}

// resolveContext is resolve, given up with ctx's error when ctx ends.
func (c *Config) resolveContext(ctx context.Context, reg *jobs.Registry) ([]engine.JobSpec, []engine.DutySpec, error) {
	var errs ConfigErrors
	add := func(e *ConfigError) { errs = append(errs, e) }

	c.checkStore(add)
	c.checkTracing(add)
	c.checkHTTP(add)
	switch c.Log.Format {
	case "", "text", "json":
	default:
		add(c.errAt(fmt.Sprintf("unknown log format %q (text or json)", c.Log.Format), "log", "format"))
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		add(c.errAt(err.Error(), "log", "level"))
	}
	c.checkMax("shutdown_grace", c.ShutdownGrace, add, "shutdown_grace")
	c.checkMax("actions_history", c.ActionsHistory, add, "actions_history")
	if c.MaxRunning < 0 || c.MaxRunning > maxMaxRunning {
		add(c.errAt(fmt.Sprintf("max_running %d is not between 0 (the default, %d) and %d", c.MaxRunning, DefaultMaxRunning,
			maxMaxRunning), "max_running"))
	}
	if _, err := c.revision(); err != nil {
		add(c.errAt(err.Error(), "revision"))
	}
	c.checkCalendars(add)
	c.checkPolicy(c.Defaults, []string{"defaults"}, add)
	defaults := c.Defaults.merge(builtin)
	c.keepZeros(&defaults, "defaults")
	c.checkWindows([]string{"defaults"}, c.Defaults, defaults, add)

	names := make([]string, 0, len(c.Jobs))
	for name := range c.Jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	plans := make([]engine.JobSpec, 0, len(names))
	specs := make(map[specKey]parsedSpec) // jobs of one schedule share its parse
	for i, name := range names {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if p, ok := c.resolveJob(name, reg, defaults, specs, add); ok {
			plans = append(plans, p)
		}
	}
	dnames := make([]string, 0, len(c.Duties))
	for name := range c.Duties {
		dnames = append(dnames, name)
	}
	sort.Strings(dnames)
	var duties []engine.DutySpec
	for _, name := range dnames {
		if d := c.resolveDuty(name, reg, add); d != nil {
			duties = append(duties, *d)
		}
	}
	c.checkStoreLease(plans, duties, add)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, nil, errs
	}
	return plans, duties, nil
}

// checkStoreLease has the store kind check its settings against the
// shortest lease of plans and duties.
func (c *Config) checkStoreLease(plans []engine.JobSpec, duties []engine.DutySpec, add func(*ConfigError)) {
	what, lease := "", time.Duration(0)
	for _, p := range plans {
		if lease == 0 || p.Lease < lease {
			what, lease = "job "+p.Name, p.Lease
		}
	}
	for _, d := range duties {
		if lease == 0 || d.Lease < lease {
			what, lease = "duty "+d.Name, d.Lease
		}
	}
	c.checkStoreAgainstLease(lease, what, add)
}

// resolveDuty checks one duty and resolves it; nil when it is bad.
func (c *Config) resolveDuty(name string, reg *jobs.Registry, add func(*ConfigError)) *engine.DutySpec {
	dc := c.Duties[name]
	ok := true
	if name == "" || strings.ContainsAny(name, "@{} \t\n") {
		ok = false
		add(c.errAt(fmt.Sprintf("duty name %q must be non-empty and contain no '@', braces or spaces", name), "duties", name))
	}
	lease := dc.Lease.D()
	if lease == 0 {
		lease = DefaultLease
	} else if lease < MinLease {
		ok = false
		add(c.errAt(fmt.Sprintf("lease %v is shorter than %v", dc.Lease, MinLease), "duties", name, "lease"))
	} else if lease > MaxLease {
		ok = false
		add(c.errAt(fmt.Sprintf("lease %v is longer than %v: a leader that died would keep its duty from every replica that long", dc.Lease, MaxLease), "duties", name, "lease"))
	}
	fnName := dc.Run
	if fnName == "" {
		fnName = name
	}
	fn, found := reg.LookupDuty(fnName)
	if !found {
		ok = false
		key := []string{"duties", name}
		if dc.Run != "" {
			key = append(key, "run")
		}
		add(c.errAt(fmt.Sprintf("no duty registered as %q (registered: %s)", fnName, listOrNone(reg.DutyNames())), key...))
	}
	if !ok {
		return nil
	}
	return &engine.DutySpec{Name: name, Fn: fn, Lease: lease}
}

// specKey is a schedule and its zone; parsedSpec what parsing it gave.
type (
	specKey    struct{ spec, tz string }
	parsedSpec struct {
		s     *schedule.Schedule
		err   error
		never bool // fires never in the next 5 years
	}
)

// resolveJob checks job name and resolves it against reg and defaults,
// reporting every problem through add; false when it has any. specs holds
// the schedules already parsed, shared by the jobs that use one.
func (c *Config) resolveJob(name string, reg *jobs.Registry, defaults Policy, specs map[specKey]parsedSpec,
	add func(*ConfigError)) (engine.JobSpec, bool) {
	jc := c.Jobs[name]
	path := []string{"jobs", name}
	ok := true
	fail := func(e *ConfigError) { ok = false; add(e) }

	c.checkJobName(name, fail)
	c.checkPolicy(jc.Policy, path, fail)
	pol := jc.Policy.merge(defaults)
	c.keepZeros(&pol, path...)
	fn := c.jobFunc(name, reg, fail)
	sched, cals := c.boundSchedule(name, jc.Policy, pol, c.jobSchedule(name, pol, specs, fail), fail)
	c.checkWindows(path, jc.Policy, pol, fail)
	params, err := paramsYAML(&jc.Params)
	if err != nil {
		fail(c.errAt(err.Error(), "jobs", name, "params"))
	}
	if !ok {
		return engine.JobSpec{}, false
	}
	return engine.JobSpec{
		Name: name, Fn: fn, Schedule: sched, Params: params, ParamsWritten: c.src.written(name, params),
		Lease: pol.Lease.D(), Timeout: pol.Timeout.D(),
		OnCrash: pol.OnCrash, AfterDataLoss: pol.AfterDataLoss, MaxAttempts: pol.MaxAttempts,
		Deadline: pol.StartingDeadline.D(), CatchUp: pol.CatchUp, CatchUpLimit: pol.CatchUpLimit,
		History: pol.History.D(), Jitter: jitterFor(name, pol.Jitter.D()), Overlap: pol.Overlap,
		Retries:            engine.Retries{Max: pol.Retries.Max, Backoff: pol.Retries.Backoff.D(), MaxBackoff: pol.Retries.MaxBackoff.D()},
		PauseAfterFailures: pol.pauseAfterFailures(), Except: cals, MaxRuns: jc.MaxRuns,
	}, true
}

// checkJobName refuses a job name that run keys, URLs or the store cannot
// carry.
func (c *Config) checkJobName(name string, fail func(*ConfigError)) {
	if name == "" || strings.ContainsAny(name, "@{} \t\n") {
		fail(c.errAt(fmt.Sprintf("job name %q must be non-empty and contain no '@', braces or spaces", name), "jobs", name))
	}
	if name == "." || name == ".." {
		// The job's URLs would hold it as a path segment, which browsers
		// resolve away.
		fail(c.errAt(fmt.Sprintf("job name %q cannot be opened from the dashboard (browsers drop it from URLs); choose another name", name), "jobs", name))
	}
}

// jobFunc returns the function registered for job name: its run key, else
// its own name; nil, reported, when none is.
func (c *Config) jobFunc(name string, reg *jobs.Registry, fail func(*ConfigError)) jobs.Func {
	jc := c.Jobs[name]
	fnName := jc.Run
	if fnName == "" {
		fnName = name
	}
	fn, found := reg.Lookup(fnName)
	if !found {
		key := []string{"jobs", name}
		if jc.Run != "" {
			key = append(key, "run")
		}
		fail(c.errAt(fmt.Sprintf("no function registered as %q (registered: %s)", fnName, listOrNone(reg.Names())), key...))
	}
	return fn
}

// jobSchedule parses job name's schedule in the zone of pol, once per
// schedule and zone (specs); nil, reported, when it is missing, does not
// parse or never fires. An unknown zone is checkPolicy's to report.
func (c *Config) jobSchedule(name string, pol Policy, specs map[specKey]parsedSpec, fail func(*ConfigError)) *schedule.Schedule {
	spec := c.Jobs[name].Schedule
	if spec == "" {
		fail(c.errAt("schedule is required", "jobs", name))
		return nil
	}
	if !knownZone(pol.Timezone) || pol.Timezone == "Local" {
		return nil
	}
	k := specKey{spec, pol.Timezone}
	ps, seen := specs[k]
	if !seen {
		ps.s, ps.err = schedule.Parse(spec, pol.Timezone)
		ps.never = ps.err == nil && ps.s.Next(time.Now()).IsZero()
		specs[k] = ps
	}
	switch {
	case ps.err != nil:
		fail(c.errAt(plainSchedule(ps.err.Error()), "jobs", name, "schedule"))
	case ps.never:
		fail(c.errAt(fmt.Sprintf("schedule %q never fires in the next 5 years", spec), "jobs", name, "schedule"))
	}
	return ps.s
}

// checkWindows refuses a policy whose history could forget a slot that may
// still be claimed, or whose jitter would make every slot miss; each at the
// setting that made it so. own is what path (defaults, or jobs.NAME) sets
// itself and pol what it resolves to. A job's problem that comes from
// defaults alone is reported once, at defaults, not again for each job.
func (c *Config) checkWindows(path []string, own, pol Policy, fail func(*ConfigError)) {
	// key is the first of keys that own sets, else nil: the problem is
	// its defaults' to report.
	key := func(keys ...string) []string {
		for _, k := range keys {
			if own.durationOf(k) != 0 {
				return append(append([]string{}, path...), k)
			}
		}
		return nil
	}
	// Out of bounds (reported where set), the sum could overflow.
	if pol.inBounds() && pol.History < pol.StartingDeadline+pol.Lease {
		if k := key("history", "starting_deadline", "lease"); k != nil {
			fail(c.errAt(fmt.Sprintf("history %v is shorter than starting_deadline + lease (%v): a finished slot could be forgotten while it may still be claimed", pol.History, pol.StartingDeadline+pol.Lease), k...))
		}
	}
	if pol.Jitter != 0 && pol.Jitter >= pol.StartingDeadline {
		if k := key("jitter", "starting_deadline"); k != nil {
			fail(c.errAt(fmt.Sprintf("jitter %v must be shorter than starting_deadline %v, or every slot would be missed", pol.Jitter, pol.StartingDeadline), k...))
		}
	}
}

// durationOf is p's duration setting named key, of those checkWindows
// weighs.
func (p Policy) durationOf(key string) Duration {
	switch key {
	case "history":
		return p.History
	case "starting_deadline":
		return p.StartingDeadline
	case "lease":
		return p.Lease
	}
	return p.Jitter
}

// atoiError is how the cron parser passes on strconv's complaint about a
// field that is not a number.
var atoiError = regexp.MustCompile(`failed to parse int from (.*?): strconv\.Atoi: parsing ".*?": (invalid syntax|value out of range)`)

// plainSchedule words a schedule's parse error without the Go functions
// and packages that produced it.
func plainSchedule(msg string) string {
	msg = atoiError.ReplaceAllStringFunc(msg, func(m string) string {
		sub := atoiError.FindStringSubmatch(m)
		if sub[2] == "value out of range" {
			return strconv.Quote(sub[1]) + " is too big"
		}
		return strconv.Quote(sub[1]) + " is not a number"
	})
	return strings.ReplaceAll(msg, "time: ", "")
}

// checkPolicy reports bad values set in p (zero fields are inherited and
// checked where they are set).
func (c *Config) checkPolicy(p Policy, path []string, add func(*ConfigError)) {
	at := func(key string) []string { return append(append([]string{}, path...), key) }
	if p.Timezone != "" {
		if p.Timezone == "Local" {
			add(c.errAt(`time zone "Local" depends on the host; name an IANA zone so every replica agrees`, at("timezone")...))
		} else if !knownZone(p.Timezone) {
			add(c.errAt(fmt.Sprintf("unknown time zone %q", p.Timezone), at("timezone")...))
		}
	}
	if p.Lease != 0 && p.Lease.D() < MinLease {
		add(c.errAt(fmt.Sprintf("lease %v is shorter than %v", p.Lease, MinLease), at("lease")...))
	}
	if p.Lease.D() > MaxLease {
		add(c.errAt(fmt.Sprintf("lease %v is longer than %v: a holder that died would keep its slot from every replica that long", p.Lease, MaxLease), at("lease")...))
	}
	// The key's path is built only for a value out of bounds: a config of
	// 100k jobs has no path to spare.
	for _, m := range [...]struct {
		name string // its keys, dotted
		d    Duration
	}{
		{"timeout", p.Timeout},
		{"starting_deadline", p.StartingDeadline},
		{"history", p.History},
		{"jitter", p.Jitter},
		{"retries.max_backoff", p.Retries.MaxBackoff},
	} {
		if m.d.D() > MaxDuration {
			c.checkMax(m.name, m.d, add, append(append([]string{}, path...), strings.Split(m.name, ".")...)...)
		}
	}
	if p.Retries.Backoff.D() > MaxRetryBackoff {
		add(c.errAt(fmt.Sprintf("retries.backoff %v is longer than %v (it doubles with each retry)", p.Retries.Backoff, MaxRetryBackoff), append(at("retries"), "backoff")...))
	}
	if p.OnCrash != "" && !p.OnCrash.Valid() {
		add(c.errAt(fmt.Sprintf("on_crash %q: want retry or skip", p.OnCrash), at("on_crash")...))
	}
	if p.AfterDataLoss != "" && !p.AfterDataLoss.Valid() {
		add(c.errAt(fmt.Sprintf("after_data_loss %q: want skip or run", p.AfterDataLoss), at("after_data_loss")...))
	}
	if p.CatchUp != "" && !p.CatchUp.Valid() {
		add(c.errAt(fmt.Sprintf("catch_up %q: want none, latest or all", p.CatchUp), at("catch_up")...))
	}
	if p.Overlap != "" && !p.Overlap.Valid() {
		add(c.errAt(fmt.Sprintf("overlap %q: want allow, forbid, replace or queue", p.Overlap), at("overlap")...))
	}
	c.checkCalendarPolicy(p, path, add)
	if p.Retries.Max < 0 {
		add(c.errAt("retries.max must not be negative", append(at("retries"), "max")...))
	}
	if p.Retries.Backoff != 0 && p.Retries.MaxBackoff != 0 && p.Retries.MaxBackoff < p.Retries.Backoff {
		add(c.errAt("retries.max_backoff is shorter than retries.backoff", append(at("retries"), "max_backoff")...))
	}
	if p.MaxAttempts < 0 {
		add(c.errAt("max_attempts must not be negative", at("max_attempts")...))
	}
	if p.CatchUpLimit < 0 {
		add(c.errAt("catch_up_limit must not be negative", at("catch_up_limit")...))
	}
	if n := p.pauseAfterFailures(); n < 0 {
		add(c.errAt("pause_after_failures must not be negative (0 never pauses)", at("pause_after_failures")...))
	} else if n > maxPauseAfterFailures {
		add(c.errAt(fmt.Sprintf("pause_after_failures %d is more than %d, the most failed slots a replica reads back from a job's history", n, maxPauseAfterFailures), at("pause_after_failures")...))
	}
	if p.CatchUpLimit > MaxCatchUpLimit {
		add(c.errAt(fmt.Sprintf("catch_up_limit %d is more than %d, the most slots of one job a replica starts at once when it comes up", p.CatchUpLimit, MaxCatchUpLimit), at("catch_up_limit")...))
	}
}

// checkMax reports a duration setting longer than MaxDuration.
func (c *Config) checkMax(name string, d Duration, add func(*ConfigError), path ...string) {
	if d.D() > MaxDuration {
		add(c.errAt(fmt.Sprintf("%s %v is longer than %v (ten years), the longest any duration may be", name, d, MaxDuration), path...))
	}
}

// inBounds reports whether the durations whose sums validation and the
// engine take are within their bounds, so those sums cannot overflow.
func (p Policy) inBounds() bool {
	return p.Lease.D() <= MaxLease && p.StartingDeadline.D() <= MaxDuration && p.History.D() <= MaxDuration &&
		p.Timeout.D() <= MaxDuration && p.Jitter.D() <= MaxDuration
}

// knownZones holds the time zone names time.LoadLocation has accepted.
// LoadLocation reads and parses the zone's file on every call: for a zone
// named by thousands of jobs, that was a third of validate's time.
var knownZones sync.Map // string → struct{}

// knownZone reports whether time.LoadLocation accepts name.
func knownZone(name string) bool {
	if _, ok := knownZones.Load(name); ok {
		return true
	}
	if _, err := time.LoadLocation(name); err != nil {
		return false
	}
	knownZones.Store(name, struct{}{})
	return true
}

// jitterFor is the job's delay in [0, window): a hash of its name, so every
// replica computes the same one.
func jitterFor(name string, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return time.Duration(h.Sum64() % uint64(window))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// replicaName returns the configured replica name or host-pid.
func (c *Config) replicaName() string {
	if c.Replica != "" {
		return c.Replica
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
