package scheduler

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// Config is the whole configuration of a replica. It maps one-to-one onto
// the YAML file (config.example.yaml is the commented reference). The zero
// value of every field means its default, stated on the field.
type Config struct {
	// Replica names this replica in markers and logs. Default: host-pid.
	Replica string `yaml:"replica"`
	// Revision orders this configuration's job specs against other
	// revisions in the store's catalog during a deploy: a whole number
	// (a CI build number) or an RFC 3339 time, read as its Unix seconds;
	// a higher revision's spec of a job takes force over a lower one's.
	// Default: none (the newest spec enrolled takes force; see the
	// README's Guarantees).
	Revision string `yaml:"revision"`
	// Store selects and configures the slot store.
	Store StoreConfig `yaml:"store"`
	// Defaults applies to every job; each job may override any field.
	Defaults Policy `yaml:"defaults"`
	// Log configures the replica's log output.
	Log LogConfig `yaml:"log"`
	// HTTP configures /metrics, /healthz and /readyz; off by default.
	HTTP HTTPConfig `yaml:"http"`
	// Metrics configures what /metrics serves.
	Metrics MetricsConfig `yaml:"metrics"`
	// ShutdownGrace is how long running jobs may go on after SIGTERM before
	// their contexts are cancelled and their slots released. Default: 25s.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// MaxRunning caps the runs this replica has in flight at once, so
	// that a replica given more slots than it can run stays bounded in
	// memory and goroutines: a due slot with no room waits for a run to
	// end, and one whose starting_deadline passes first (or that its
	// job's next slot overtakes) is recorded missed, reason "missed:
	// overloaded". Triggered and backfilled runs count toward it but are
	// never refused. At most 1,000,000. Default: 10000.
	MaxRunning int `yaml:"max_running"`
	// ActionsHistory is how long the store keeps each entry of its actions
	// log: who paused, resumed, triggered or backfilled what, wrote a
	// schedule, and which configuration revisions took effect. Default:
	// 2160h (90 days).
	ActionsHistory Duration `yaml:"actions_history"`
	// Jobs maps each job name to its schedule and policy.
	Jobs map[string]JobConfig `yaml:"jobs"`
	// Duties maps each duty name to its settings: long-running singleton
	// responsibilities held by one elected replica at a time.
	Duties map[string]DutyConfig `yaml:"duties"`
	// Calendars names sets of dates that jobs skip (Policy.Except):
	// holidays, maintenance days.
	Calendars map[string]Calendar `yaml:"calendars"`
	// Tracing exports OpenTelemetry spans of every run; off by default.
	Tracing TracingConfig `yaml:"tracing"`

	src *source // where the config came from, for error positions; nil if built in code
}

// StoreConfig selects the slot store and configures it.
//
// A binary supports the store kinds it links: sqlite and memory always;
// redis, postgres and etcd when it imports scheduler/redis,
// scheduler/postgres or scheduler/etcd (package storekind says how kinds
// register). In YAML, store.kind chooses the kind and the block named for
// it configures it (store.postgres: for postgres); that block is the
// backend's Options struct, key for field, and is decoded into Options.
// The blocks of the other linked kinds are checked too, and dropped; a
// block of a kind slotcron ships but the binary does not link is not read,
// unless store.kind chooses it, which is an error naming the import to add.
type StoreConfig struct {
	// Kind is sqlite (the default), memory, redis, postgres, etcd, or
	// another registered kind.
	Kind string `yaml:"kind"`
	// Options configures the kind: a value of its backend's Options type
	// (sqlitestore.Options for sqlite, redisstore.Options for redis,
	// pgstore.Options for postgres, etcdstore.Options for etcd), or a
	// pointer to one. Nil means that type's zero value, the backend's
	// defaults; memory takes none. Load sets it from the kind's block.
	// The blocks are read by StoreConfig's UnmarshalYAML, so read a Config
	// with Load or Parse (or go.yaml.in/yaml/v3): other YAML libraries
	// leave Options nil.
	Options any `yaml:"-"`
}

// LogConfig configures logging.
type LogConfig struct {
	// Format is text (the default) or json.
	Format string `yaml:"format"`
	// Level is debug, info (the default), warn or error.
	Level string `yaml:"level"`
}

// Policy holds the settings a job inherits from defaults and may override.
// A zero field inherits: from Config.Defaults for a job, from the built-in
// default for Config.Defaults. No duration, here or anywhere in Config, may
// be longer than MaxDuration (ten years); some have tighter bounds, stated
// on the field.
type Policy struct {
	// Timezone of the schedule, an IANA name. Default: UTC.
	Timezone string `yaml:"timezone"`
	// Lease is how long a holder may act without renewing; renewed every
	// lease/3. At least 1s (MinLease), at most 24h (MaxLease). Default: 15s.
	Lease Duration `yaml:"lease"`
	// Timeout bounds one run; the job's context ends then. Default: 10m.
	Timeout Duration `yaml:"timeout"`
	// OnCrash is retry (default: another replica takes over a slot whose
	// holder died) or skip (the slot is marked abandoned).
	OnCrash policy.OnCrash `yaml:"on_crash"`
	// MaxAttempts bounds takeovers of a slot whose holders died: the slot
	// is abandoned instead of starting attempt MaxAttempts+1. Default: 3.
	MaxAttempts int `yaml:"max_attempts"`
	// StartingDeadline: a replica starts a slot only while
	// now <= slot + StartingDeadline; later the slot is missed. Default: 1m.
	StartingDeadline Duration `yaml:"starting_deadline"`
	// CatchUp decides, when a replica starts, which slots of the last
	// StartingDeadline it still tries: none, latest (the default) or all.
	CatchUp policy.CatchUp `yaml:"catch_up"`
	// CatchUpLimit caps catch_up: all. At most 1000 (MaxCatchUpLimit).
	// Default: 10.
	CatchUpLimit int `yaml:"catch_up_limit"`
	// History is how long markers are kept; at least
	// StartingDeadline + Lease. Default: 168h.
	History Duration `yaml:"history"`
	// Jitter spreads jobs that share a schedule: each job is tried at
	// slot + a delay in [0, Jitter) derived from its name alone, so the
	// same on every replica. The slot itself, its run key and its starting
	// deadline do not move. Default: 0.
	Jitter Duration `yaml:"jitter"`
	// Overlap decides what a new slot does while an earlier slot of the
	// same job still runs on any replica: allow (the default) runs both;
	// forbid skips the new slot (recorded with reason overlap); replace
	// revokes the earlier run's lease, cancelling it, and runs the new one.
	Overlap policy.Overlap `yaml:"overlap"`
	// Retries re-runs a failed or timed-out slot, on whichever replica
	// claims the retry, never past the slot's starting deadline nor into
	// its next slot.
	Retries RetryPolicy `yaml:"retries"`
	// PauseAfterFailures pauses the job on every replica when this many of
	// its most recent finished slots all failed (a slot counts once, when
	// its retries are spent; a success, or a slot skipped while the job was
	// paused, ends the row), with by "slotcron" and the count and the last
	// error as the pause's reason, until an operator resumes it; a resume
	// before the next slot starts no fresh row. The row is the cluster's,
	// read from the job's history: slots run by different replicas count
	// together. At most 1000. 0 never pauses, also in a job whose defaults
	// say otherwise; nil inherits. Default: never.
	PauseAfterFailures *int `yaml:"pause_after_failures"`
	// DST chooses, for a fixed-time schedule (its hour field is numbers),
	// what a jump of its zone's clock does to a wall time it skips or
	// shows twice. Default: gap shift, repeat first. Set on a job whose
	// schedule follows real time (the hour field "*" or a step, @hourly,
	// @every) it is an error; set in defaults it applies to the
	// fixed-time jobs only.
	DST DST `yaml:"dst"`
	// Except names calendars (Config.Calendars) whose dates the job skips:
	// a slot whose date in the job's time zone is one of theirs is
	// recorded skipped with reason "calendar NAME", neither run nor
	// missed, and a backfill leaves it alone. A job's list replaces the
	// one of defaults; an empty list ([]) clears it. Default: none.
	Except []string `yaml:"except"`
}

// DST is a fixed-time schedule's rule for the wall times a daylight-saving
// jump skips (Gap) or shows twice (Repeat). The zero value is the default,
// gap shift and repeat first: each wall time runs once a day, late when a
// gap skips it, at its first occurrence when it is shown twice.
type DST struct {
	// Gap is shift (the default: run when the gap ends) or skip (no slot
	// that day).
	Gap policy.Gap `yaml:"gap"`
	// Repeat is first (the default: the first occurrence only) or both
	// (a slot at each occurrence).
	Repeat policy.Repeat `yaml:"repeat"`
}

// Active bounds a job's slots to a window of time, both bounds included;
// a zero bound leaves that side open. Slots outside it are not the job's:
// they are neither run nor recorded.
type Active struct {
	// From is the first instant a slot may have. RFC 3339 in YAML.
	From time.Time `yaml:"from"`
	// Until is the last instant a slot may have. RFC 3339 in YAML.
	Until time.Time `yaml:"until"`
}

// Calendar is a named set of dates that jobs listing it in Except skip.
type Calendar struct {
	// Dates are days, YYYY-MM-DD, read in the time zone of each job that
	// skips them: a slot whose local date is one of them is skipped.
	Dates []string `yaml:"dates"`
}

// RetryPolicy bounds the retries of one slot.
type RetryPolicy struct {
	// Max is how many times a failed slot is tried again. Default: 0.
	Max int `yaml:"max"`
	// Backoff is the wait before the first retry; it doubles with each
	// retry. At most 1h (MaxRetryBackoff). Default: 1s.
	Backoff Duration `yaml:"backoff"`
	// MaxBackoff caps the wait. Default: 1m.
	MaxBackoff Duration `yaml:"max_backoff"`
}

// DutyConfig declares one duty.
type DutyConfig struct {
	// Lease is how long a leader may act without renewing; renewed every
	// lease/3; failover after a crash takes at most this long. At least
	// 1s, at most 24h. Default: 15s.
	Lease Duration `yaml:"lease"`
	// Run names the registered duty function. Default: the duty's name.
	Run string `yaml:"run"`
}

// JobConfig declares one job.
type JobConfig struct {
	// Schedule is a cron spec: 5 fields, 6 with seconds, a descriptor such
	// as @hourly, or @every 30s (anchored to the Unix epoch). Required.
	Schedule string `yaml:"schedule"`
	// Run names the registered function. Default: the job's own name.
	Run string `yaml:"run"`
	// Params is handed to the job, which decodes it with Run.Params.
	Params yaml.Node `yaml:"params"`
	// Active bounds the job's slots: none before Active.From, none after
	// Active.Until. Default: always.
	Active Active `yaml:"active"`
	// MaxRuns ends the job after its first MaxRuns slots counted from
	// Active.From, which it requires: so every replica counts the same
	// slots, whenever it started. A slot counts whether it ran, failed or
	// was missed; one a calendar of Except skips does not. At most
	// 100000. Default: 0, no limit.
	MaxRuns int `yaml:"max_runs"`

	Policy `yaml:",inline"`
}

// Built-in defaults.
const (
	DefaultLease            = 15 * time.Second
	DefaultTimeout          = 10 * time.Minute
	DefaultMaxAttempts      = 3
	DefaultStartingDeadline = time.Minute
	DefaultCatchUpLimit     = 10
	DefaultHistory          = 168 * time.Hour
	DefaultShutdownGrace    = 25 * time.Second
	DefaultMaxRunning       = engine.DefaultMaxRunning
	MinLease                = time.Second
)

// Upper bounds of settings; a configuration beyond them is refused.
const (
	// MaxLease bounds a lease: a holder that dies keeps its slot (or its
	// duty) from every other replica for up to a lease.
	MaxLease = 24 * time.Hour
	// MaxDuration bounds every other duration, ten years, so that sums of
	// settings (starting_deadline + lease, timeout + lease) always fit in
	// a time.Duration, whose longest is about 292 years.
	MaxDuration = 10 * 365 * 24 * time.Hour
	// MaxRetryBackoff bounds retries.backoff, which doubles with each
	// retry.
	MaxRetryBackoff = time.Hour
	// maxMaxRunning bounds max_running.
	maxMaxRunning = 1000000
	// MaxCatchUpLimit bounds catch_up_limit: the slots of one job a
	// replica starts at once when it comes up, one claim batch.
	MaxCatchUpLimit = 1000
	// maxMaxRuns bounds max_runs: the job's end is found by walking its
	// slots from active.from when the configuration is read.
	maxMaxRuns = 100000
)

// maxPauseAfterFailures bounds pause_after_failures: the failed slots a
// replica reads back from the job's history at each failure.
const maxPauseAfterFailures = 1000

// pauseAfterFailures is p's pause_after_failures, 0 when not set.
func (p Policy) pauseAfterFailures() int {
	if p.PauseAfterFailures == nil {
		return 0
	}
	return *p.PauseAfterFailures
}

// merge returns p with every zero field taken from d.
func (p Policy) merge(d Policy) Policy {
	out := Policy{
		Timezone:         pick(p.Timezone, d.Timezone),
		Lease:            pick(p.Lease, d.Lease),
		Timeout:          pick(p.Timeout, d.Timeout),
		OnCrash:          pick(p.OnCrash, d.OnCrash),
		MaxAttempts:      pick(p.MaxAttempts, d.MaxAttempts),
		StartingDeadline: pick(p.StartingDeadline, d.StartingDeadline),
		CatchUp:          pick(p.CatchUp, d.CatchUp),
		CatchUpLimit:     pick(p.CatchUpLimit, d.CatchUpLimit),
		History:          pick(p.History, d.History),
		Jitter:           pick(p.Jitter, d.Jitter),
		Overlap:          pick(p.Overlap, d.Overlap),
		Retries: RetryPolicy{
			Max:        pick(p.Retries.Max, d.Retries.Max),
			Backoff:    pick(p.Retries.Backoff, d.Retries.Backoff),
			MaxBackoff: pick(p.Retries.MaxBackoff, d.Retries.MaxBackoff),
		},
		PauseAfterFailures: pick(p.PauseAfterFailures, d.PauseAfterFailures),
		DST:                DST{Gap: pick(p.DST.Gap, d.DST.Gap), Repeat: pick(p.DST.Repeat, d.DST.Repeat)},
		Except:             p.Except,
	}
	if out.Except == nil {
		out.Except = d.Except
	}
	return out
}

// pick returns a, or b when a is the zero value.
func pick[T comparable](a, b T) T {
	var zero T
	if a == zero {
		return b
	}
	return a
}

// builtin is the policy every zero field finally falls back to.
var builtin = Policy{
	Timezone:         "UTC",
	Lease:            Duration(DefaultLease),
	Timeout:          Duration(DefaultTimeout),
	OnCrash:          policy.OnCrashRetry,
	MaxAttempts:      DefaultMaxAttempts,
	StartingDeadline: Duration(DefaultStartingDeadline),
	CatchUp:          policy.CatchUpLatest,
	CatchUpLimit:     DefaultCatchUpLimit,
	History:          Duration(DefaultHistory),
	Overlap:          policy.OverlapAllow,
	Retries:          RetryPolicy{Backoff: Duration(time.Second), MaxBackoff: Duration(time.Minute)},
}

// MetricsConfig configures the metrics /metrics serves.
type MetricsConfig struct {
	// PerJobHistograms labels the run duration, dispatch delay and lease
	// renewal histograms with the job, as the counters are. Off by default:
	// each is a dozen series per job (a million at 100k jobs), and one
	// histogram per replica answers "are slots late" as well.
	PerJobHistograms bool `yaml:"per_job_histograms"`
}

// HTTPConfig configures the replica's HTTP endpoints.
type HTTPConfig struct {
	// Listen is the address of /metrics, /healthz, /readyz, the JSON API
	// under /api/ and the dashboard at /, such as 127.0.0.1:9090. Empty
	// means no HTTP server.
	Listen string `yaml:"listen"`
	// Token is a bearer token of the admin role, named "token": the
	// single token of configurations before Tokens, kept working. Empty
	// means none.
	Token string `yaml:"token"`
	// Tokens are the bearer tokens that may call the API, each with a
	// name and a role (reader, operator, admin). None, and no Token,
	// refuses every mutation.
	Tokens []HTTPToken `yaml:"tokens"`
	// ReadAuth makes the API's reads, the dashboard's data and
	// /api/whoami need a token of the reader role or above. Default: on
	// when Listen is not a loopback address, off on loopback.
	ReadAuth *bool `yaml:"read_auth"`
	// OpenMetrics serves /metrics without a token; off, it needs the
	// reader role. Default: on. /healthz and /readyz are always open.
	OpenMetrics *bool `yaml:"open_metrics"`
	// TLS, when set, serves HTTPS only, from a certificate and key read
	// again when they change; nil serves plain HTTP.
	TLS *HTTPTLS `yaml:"tls"`
}

// HTTPTLS is the listener's TLS: its certificate and key files (PEM),
// and optionally the CAs client certificates are verified against, with
// the role of each client by its certificate's common name.
type HTTPTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, lets a client present a certificate instead
	// of a token; ClientRoles names the role (reader, operator, admin) of
	// each certificate's subject common name, and refuses any other.
	ClientCAFile string            `yaml:"client_ca_file"`
	ClientRoles  map[string]string `yaml:"client_roles"`
}

// HTTPToken is one bearer token of the HTTP API: who holds it, what it may
// do, and where it is read from, a file or an environment variable
// (exactly one). Only its SHA-256 is kept in memory. A file holds one token
// a line, trimmed, and is re-read on SIGHUP and when it changes: to rotate,
// write the new token beside the old, move the clients, then remove the old.
type HTTPToken struct {
	// Name is the caller's name in logs and in what its writes record;
	// required, unique.
	Name string `yaml:"name"`
	// Role is reader (reads, the dashboard), operator (trigger, backfill,
	// pause and resume a job or a schedule) or admin (also the cluster's
	// pause and resume, schedule writes).
	Role string `yaml:"role"`
	// File is a file whose content is the token.
	File string `yaml:"file"`
	// Env is an environment variable whose value is the token, read at
	// start-up.
	Env string `yaml:"env"`
}

// Warnings returns what in c is allowed but most likely a mistake, each
// with its file, line and key: an empty file, or no jobs and no duties (a
// replica that runs nothing). `scheduler validate` and `scheduler run`
// print them and go on. nil when there are none.
func (c *Config) Warnings() []*ConfigError {
	if len(c.Jobs) > 0 || len(c.Duties) > 0 {
		return nil
	}
	if c.src != nil && len(c.src.root.Content) == 0 {
		return []*ConfigError{{File: c.src.file, Msg: "the file is empty: no jobs and no duties, so a replica runs nothing"}}
	}
	const msg = "no jobs and no duties: a replica runs nothing"
	for _, key := range []string{"jobs", "duties"} {
		if c.src.line(key) != 0 {
			return []*ConfigError{c.errAt(msg, key)}
		}
	}
	return []*ConfigError{{File: c.src.fileName(), Msg: msg}}
}
