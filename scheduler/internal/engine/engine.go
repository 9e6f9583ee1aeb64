package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// Config is what an engine is built from: the resolved jobs and duties and
// the replica's settings. Every field is required but Duties, Registry and
// Runtime.
type Config struct {
	// Replica names this replica in markers and logs; Incarnation tells
	// this process from others started with the same name.
	Replica, Incarnation string
	// Log is the replica's logger; the engine attaches the replica to its
	// own lines (runs and duties attach theirs).
	Log *slog.Logger
	// Now is the clock that decides when to try a slot.
	Now func() time.Time
	// Grace is how long running jobs may finish at shutdown.
	Grace time.Duration
	Jobs  []JobSpec
	// Duties are the duties to campaign for.
	Duties []DutySpec
	// PerJobHistograms labels the histograms with the job.
	PerJobHistograms bool
	// Registry receives the engine's metrics; Runtime adds the Go and
	// process collectors (for a registry of the engine's own).
	Registry prometheus.Registerer
	Runtime  bool
	// Revision is the configuration's revision, which orders the jobs'
	// specs in the catalog across a deploy; 0 for none.
	Revision int64
	// Lookup finds a registered job by name, for the schedules held as
	// data, which Run follows when it is set (follow.go).
	Lookup func(string) (jobs.Func, bool)
	// ActionsHistory is how long the store keeps the actions the engine
	// records (actions.go); 0 for DefaultActionsHistory.
	ActionsHistory time.Duration
	// MaxRunning caps the runs in flight (admit.go); 0 for
	// DefaultMaxRunning.
	MaxRunning int
}

// JobSpec is one job as the configuration resolved it: every duration
// defaulted and checked.
type JobSpec struct {
	Name string
	// Run is, for a schedule held as data, the registered job it runs
	// (its metrics' job_name); empty for a job of the configuration.
	Run      string
	Fn       jobs.Func
	Schedule *schedule.Schedule
	Params   []byte // the job's YAML params, re-encoded; nil when none
	// ParamsWritten is the params as the configuration file wrote them,
	// ${VAR} references unexpanded: what the catalog's spec hashes when
	// set, so a secret in a variable never reaches the store (as an
	// unsalted hash, a guess of it could be checked) and rotating it is no
	// change of spec. Nil: Params is hashed.
	ParamsWritten []byte
	Lease         time.Duration
	Timeout       time.Duration
	OnCrash       policy.OnCrash
	// AfterDataLoss is the job's after_data_loss; empty is skip.
	AfterDataLoss policy.AfterDataLoss
	MaxAttempts   int
	Deadline      time.Duration // the starting deadline
	CatchUp       policy.CatchUp
	CatchUpLimit  int
	History       time.Duration
	Jitter        time.Duration // this job's fixed delay after each slot
	// JitterWindow is, for a schedule held as data, the jitter it was
	// written with, of which Jitter is its fixed share; 0 otherwise.
	JitterWindow time.Duration
	Overlap      policy.Overlap
	Retries      Retries
	// PauseAfterFailures pauses the job after this many failed slots in a
	// row (see autopause.go); 0 never does.
	PauseAfterFailures int
	// Except are the calendars whose dates the job skips (calendar.go).
	Except []Calendar
	// MaxRuns is the job's max_runs, for its spec: the end it puts to the
	// job's slots is the Schedule's own bound (LastOfRuns). 0 for none.
	MaxRuns int
}

// Retries is a job's retry policy.
type Retries struct {
	Max                 int
	Backoff, MaxBackoff time.Duration
}

// DutySpec is one duty as the configuration resolved it.
type DutySpec struct {
	Name  string
	Fn    jobs.DutyFunc
	Lease time.Duration
}

// plan is a job as the engine keeps it.
type plan struct {
	name string
	// run is, for a schedule held as data, the registered job it runs
	// (follow.go); empty for a job of the configuration.
	run     string
	fn      jobs.Func
	sched   *schedule.Schedule
	params  []byte
	lease   time.Duration
	timeout time.Duration
	onCrash policy.OnCrash
	// afterLoss is the job's after_data_loss: run (engine/loss.go).
	afterLoss    bool
	maxAtt       int
	deadline     time.Duration
	catchUp      policy.CatchUp
	catchUpLimit int
	history      time.Duration
	jitter       time.Duration
	overlap      policy.Overlap
	retries      Retries
	pauseAfter   int
	// except are the job's calendars (calendar.go); nil for none.
	except []Calendar
	// maxRuns is the job's max_runs, for the line that says it ended.
	maxRuns int
	// ended is set once the replica said the job has no more slots.
	ended atomic.Bool
	// deciding, holding one token, serialises this replica's
	// pause-on-failure decisions for the job (autopause.go); a channel, so
	// a wait for it is one a test's fake clock can pass.
	deciding chan struct{}
	// metrics holds the job's metric series once it has any.
	metrics atomic.Pointer[jobMetrics]
	// mark is set once Run scheduled the job, with its schedule interval.
	mark scheduleMark
	// nextRun is the nominal time of the next slot the loop scheduled, in
	// Unix milliseconds (0 before the first), for nextRunGauge.
	nextRun atomic.Int64
	// spec is what the job enrolls in the catalog; conflict, while set,
	// is the spec in force that is not it (catalog.go).
	spec     slotstore.Spec
	conflict atomic.Pointer[slotstore.SpecRecord]
	// retired is set once a reload removed the job or changed its spec: its
	// entries are dropped, its running slots finish (reload.go).
	retired atomic.Bool
	// from is, for a schedule held as data, when its write took effect, by
	// the store's clock: its first slots after a change are those after it.
	from time.Time
	// newSince is when the store began to record the job, if its enrolment
	// began it (enroll), for the loop's memo; zero otherwise.
	newSince time.Time
}

// metricJob is the job_name of the job's metrics: its name, or a
// schedule's run, so that series stay per registered job.
func (p *plan) metricJob() string {
	if p.run != "" {
		return p.run
	}
	return p.name
}

func (p *plan) String() string { return fmt.Sprintf("%s (%s)", p.name, p.sched) }

// dutyPlan is a duty as the engine keeps it.
type dutyPlan struct {
	name  string
	fn    jobs.DutyFunc
	lease time.Duration
	// term is the term this replica holds, if any, for Duties and beats.
	term atomic.Pointer[slotstore.DutyTerm]
}

// Engine schedules and runs the jobs of one replica. Run runs it once;
// Trigger and Start may be called at any time, concurrently.
type Engine struct {
	// set holds the jobs of the configuration in force (reload.go): a
	// reload replaces it whole, so a reader sees one configuration.
	set         atomic.Pointer[planSet]
	duties      []*dutyPlan
	replica     string
	incarnation string
	// log has the replica attached; base does not, for runs and duties,
	// whose attributes name the replica themselves.
	log, base *slog.Logger
	now       func() time.Time
	grace     time.Duration
	// maxRunning is Config.MaxRunning.
	maxRunning int
	// actionsRetain is Config.ActionsHistory.
	actionsRetain time.Duration
	metrics       *metrics
	// tracer starts the spans of runs; Run sets it from RunParams.Tracing
	// (a run outside Run, TriggerOn's, may read it meanwhile). Nil traces
	// nothing.
	tracer atomic.Pointer[tracer]
	// live is the loop of a Run in progress, which triggers go through.
	live liveEngine
	// follow follows the schedules held as data; nil when not (follow.go).
	follow *follower
	// catalogKick wakes the watch of the catalog (catalog.go).
	catalogKick chan struct{}
	// reloads hands the loop a reload's jobs; reloading serialises
	// reloads (reload.go).
	reloads   chan reloadReq
	reloading sync.Mutex
	// started is when the engine was built; build is this binary's build.
	started time.Time
	build   buildinfo.Info
}

// New builds an engine and registers its metrics.
func New(c Config) (*Engine, error) {
	e := &Engine{replica: c.Replica, incarnation: c.Incarnation, log: c.Log.With("replica", c.Replica), base: c.Log, now: c.Now, grace: c.Grace, actionsRetain: c.ActionsHistory, maxRunning: c.MaxRunning,
		metrics: newMetrics(c.PerJobHistograms), started: c.Now(), build: buildinfo.Read(), catalogKick: make(chan struct{}, 1),
		reloads: make(chan reloadReq)}
	set, _ := newPlanSet(c.Jobs, c.Revision, nil)
	e.set.Store(set)
	if c.Lookup != nil {
		e.follow = newFollower(c.Lookup)
	}
	for _, d := range c.Duties {
		e.duties = append(e.duties, &dutyPlan{name: d.Name, fn: d.Fn, lease: d.Lease})
	}
	e.metrics.paused.known = func(job string) bool { // a series per job of the configuration, none per schedule
		p := e.jobs().byName[job]
		return p != nil && p.run == ""
	}
	if c.Registry != nil {
		if err := e.metrics.register(c.Registry, c.Runtime); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return e, nil
}

// Errors of triggers, which the scheduler package exports.
var (
	// ErrBusy: a job with overlap forbid has a slot running somewhere.
	ErrBusy = errors.New("scheduler: busy")
	// ErrPaused: the job, or the whole cluster, is paused.
	ErrPaused = errors.New("scheduler: paused")
	// ErrNoJob: the configuration has no such job.
	ErrNoJob = errors.New("scheduler: no such job")
	// ErrNotRunning: no Run is in progress, or it is shutting down.
	ErrNotRunning = errors.New("scheduler: not running")
	// ErrSpecConflict: this replica's spec of the job is not the spec in
	// force in the store's catalog, so it claims none of the job's slots.
	ErrSpecConflict = errors.New("scheduler: another spec of the job is in force")
	// ErrNoFreeSlot: every second a manual slot could take is scheduled or
	// taken by other triggers; try again later.
	ErrNoFreeSlot = errors.New("scheduler: no free slot for a manual run")
)

// Replica returns the name of this replica.
func (e *Engine) Replica() string { return e.replica }

// Now returns the engine's current time.
func (e *Engine) Now() time.Time { return e.now() }

// Log returns the replica's logger.
func (e *Engine) Log() *slog.Logger { return e.log }

// StoreCall records whether a call to the store succeeded, for store_up.
func (e *Engine) StoreCall(err error) { e.metrics.storeCall(err) }

// Jobs describes every job of the configuration, in its order, as its
// JobSpec without Fn and Params.
func (e *Engine) Jobs() []JobSpec {
	plans := e.jobs().config()
	out := make([]JobSpec, len(plans))
	for i, p := range plans {
		out[i] = p.describe()
	}
	return out
}

// Job describes the job or schedule held as data name that this replica
// runs, as Jobs does; false when it runs none of that name.
func (e *Engine) Job(name string) (JobSpec, bool) {
	p := e.jobs().plan(name)
	if p == nil {
		return JobSpec{}, false
	}
	return p.describe(), true
}

// describe is p as its JobSpec without Fn and Params.
func (p *plan) describe() JobSpec {
	return JobSpec{Name: p.name, Run: p.run, Schedule: p.sched, Lease: p.lease, Timeout: p.timeout, OnCrash: p.onCrash,
		AfterDataLoss: p.afterDataLoss(),
		MaxAttempts:   p.maxAtt, Deadline: p.deadline, CatchUp: p.catchUp, CatchUpLimit: p.catchUpLimit,
		History: p.history, Jitter: p.jitter, Overlap: p.overlap, Retries: p.retries,
		PauseAfterFailures: p.pauseAfter, Except: p.except, MaxRuns: p.maxRuns}
}

// HasJob reports whether the configuration has job.
func (e *Engine) HasJob(job string) bool { return e.jobs().plan(job) != nil }

// maxLease is the longest lease of any job.
func (e *Engine) maxLease() time.Duration {
	var d time.Duration
	for _, p := range e.jobs().all() {
		d = max(d, p.lease)
	}
	return d
}
