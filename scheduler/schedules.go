package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Schedule is a schedule held as data: one registered job run on its own
// schedule, with its own params, created, changed and deleted while the
// replicas run (per-tenant schedules). Its ID is the name its slots, run
// keys, fences, history, pauses and audit are kept under, like a job of the
// configuration's; a job of the configuration is in turn a schedule whose ID
// is its name, which only the configuration changes.
type Schedule struct {
	// ID names the schedule: 1 to 200 bytes of printable ASCII without '@'
	// or braces, not "." or "..". Required.
	ID string
	// Job is the registered job the schedule runs. Required.
	Job string
	// Schedule is a cron spec (5 fields, 6 with seconds, a descriptor such
	// as @hourly) or @every 30s. Required.
	Schedule string
	// Params is handed to the schedule's runs (jobs.Run.Params), any JSON
	// value; at most 8 KiB. Nil for none.
	Params json.RawMessage
	// Start and End bound the schedule's slots, both included; zero for
	// no bound.
	Start, End time.Time
	// MaxRuns ends the schedule after its first MaxRuns slots counted
	// from Start, which it requires (JobConfig.MaxRuns); read back, End
	// is the end that puts when it is the earlier. 0 for no limit.
	MaxRuns int
	// Policy holds the schedule's zone and policies. Each field left zero
	// takes, when the schedule is written, the value of the configuration's
	// job named like Job if it has one, else of the configuration's
	// defaults, else the built-in default: what the writer's configuration
	// says is stored with the schedule, so every replica runs it alike.
	Policy Policy

	// Version is the schedule's version as read: 1 once created, one more
	// for each change. A Put of a Schedule whose Version is not zero
	// succeeds only if the schedule is still at that version
	// (ErrVersionMismatch otherwise); zero puts whatever the version.
	Version int64
	// UpdatedAt and UpdatedBy are when, by the store's clock, and by whom
	// the schedule was last written; Paused whether it is paused. Read only.
	UpdatedAt time.Time
	UpdatedBy string
	Paused    bool
	// Created says the last write made the schedule: none had the ID, or
	// the one that had it was deleted. Read only.
	Created bool
}

// Errors of schedule writes.
var (
	// ErrNoSchedule: no schedule has the ID (or it was deleted).
	ErrNoSchedule = slotstore.ErrNoSchedule
	// ErrVersionMismatch: the schedule is not at the version the write
	// expected; read it again.
	ErrVersionMismatch = slotstore.ErrVersionMismatch
	// ErrNotSchedule: the ID is a job of the configuration, which only the
	// configuration changes.
	ErrNotSchedule = slotstore.ErrNotSchedule
)

// maxParams bounds a schedule's params, so that its spec fits the store's
// bound on a spec body with room for the rest.
const maxParams = 8 << 10

// Schedules reads and writes the schedules held as data of one store. Any
// process that can reach the store may use one, not only a replica: the
// handler of a service that saves a customer's preference, say. Its methods
// are safe for concurrent use.
type Schedules struct {
	st    slotstore.Store
	cfg   *Config
	reg   *jobs.Registry
	by    string
	log   *slog.Logger // where a failed record of a write is logged; nil: slog's default
	close func() error
}

// OpenSchedules opens the store cfg configures, for schedule reads and
// writes that validate against reg and default from cfg. Close it when
// done. Writes are recorded as made by this host and user (see By).
func OpenSchedules(ctx context.Context, cfg *Config, reg *jobs.Registry) (*Schedules, error) {
	if cfg == nil || reg == nil {
		return nil, errors.New("scheduler: open schedules: nil config or registry")
	}
	st, err := backend.Open(ctx, cfg.backendConfig())
	if err != nil {
		return nil, fmt.Errorf("scheduler: open schedules: %w", err)
	}
	s := NewSchedules(st, cfg, reg)
	s.close = st.Close
	return s, nil
}

// NewSchedules returns the schedules of st, which the caller keeps and
// closes, validated against reg and defaulting from cfg (nil for the
// built-in defaults alone).
func NewSchedules(st slotstore.Store, cfg *Config, reg *jobs.Registry) *Schedules {
	if cfg == nil {
		cfg = &Config{}
	}
	return &Schedules{st: st, cfg: cfg, reg: reg, by: defaultWriter(), close: func() error { return nil }}
}

// By returns a copy of s whose writes are recorded as made by who (a
// token's name, a user): at most 200 bytes.
func (s *Schedules) By(who string) *Schedules {
	c := *s
	c.by = who
	return &c
}

// Close closes the store OpenSchedules opened; nothing for NewSchedules'.
func (s *Schedules) Close() error { return s.close() }

// defaultWriter names the process that writes through the Go API: "go",
// the OS user and host.
func defaultWriter() string { return "go" + strings.TrimPrefix(defaultBy(), "cli") }

// Put creates sc or replaces the schedule of its ID with it, and returns it
// as stored. A put that changes nothing returns the schedule as it was. A
// schedule that is not valid is refused with a *ScheduleError naming the
// field; nothing is written then.
func (s *Schedules) Put(ctx context.Context, sc Schedule) (Schedule, error) {
	return s.putOne(ctx, sc, false)
}

// Create creates sc, and fails with ErrVersionMismatch if a schedule of its
// ID exists.
func (s *Schedules) Create(ctx context.Context, sc Schedule) (Schedule, error) {
	return s.putOne(ctx, sc, true)
}

// putOne is putAll of sc alone, its pause read back with it.
func (s *Schedules) putOne(ctx context.Context, sc Schedule, create bool) (Schedule, error) {
	res, err := s.putAll(ctx, []Schedule{sc}, create)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("scheduler: put schedule %s: %w", sc.ID, err)
	}
	return s.withPauses(ctx, []Schedule{res[0].Schedule})[0], nil
}

// PutResult is the outcome of one schedule of PutAll.
type PutResult struct {
	Schedule Schedule // as stored, when Err is nil
	Err      error
}

// PutAll puts every schedule of scs, in batches of up to 1,000 a store
// round trip, and returns one result per schedule, in order: a schedule
// that is not valid, or whose version does not match, fails alone. The
// error is the store's, after which the remaining results are unknown.
func (s *Schedules) PutAll(ctx context.Context, scs []Schedule) ([]PutResult, error) {
	return s.putAll(ctx, scs, false)
}

// createAll is PutAll of creates only.
func (s *Schedules) createAll(ctx context.Context, scs []Schedule) ([]PutResult, error) {
	return s.putAll(ctx, scs, true)
}

func (s *Schedules) putAll(ctx context.Context, scs []Schedule, create bool) ([]PutResult, error) {
	out := make([]PutResult, len(scs))
	var ws []slotstore.ScheduleWrite
	var at []int
	flush := func() error {
		if len(ws) == 0 {
			return nil
		}
		res, err := s.st.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: s.by, Writes: ws})
		s.recordWrites(ctx, create, ws, res, err)
		if err != nil {
			return fmt.Errorf("scheduler: write %d schedules: %w", len(ws), err)
		}
		for k, r := range res {
			i := at[k]
			if out[i].Err = r.Err; r.Err == nil {
				out[i].Schedule, out[i].Err = scheduleOf(r.Entry)
			}
		}
		ws, at = ws[:0], at[:0]
		return nil
	}
	for i, sc := range scs {
		if_ := sc.Version
		switch {
		case create:
			if_ = 0
		case if_ == 0:
			if_ = slotstore.AnyVersion
		}
		w, err := s.toWrite(sc, if_)
		if err != nil {
			out[i].Err = err
			continue
		}
		ws, at = append(ws, w), append(at, i)
		if len(ws) == slotstore.MaxScheduleWrites {
			if err := flush(); err != nil {
				return out, err
			}
		}
	}
	return out, flush()
}

// Delete deletes the schedule id: it takes no slot once Delete has
// returned, and a slot of it running then finishes. version, when not zero,
// is the version the schedule must be at.
func (s *Schedules) Delete(ctx context.Context, id string, version int64) error {
	if version == 0 {
		version = slotstore.AnyVersion
	}
	res, err := s.st.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: s.by,
		Writes: []slotstore.ScheduleWrite{{ID: id, Delete: true, IfVersion: version}}})
	if err == nil {
		s.record(ctx, engine.Act{Kind: "schedule-delete", Target: id, Err: res[0].Err})
	} else {
		s.record(ctx, engine.Act{Kind: "schedule-delete", Target: id, Err: err})
	}
	if err != nil {
		return fmt.Errorf("scheduler: delete schedule %s: %w", id, err)
	}
	if res[0].Err != nil {
		return fmt.Errorf("scheduler: delete schedule %s: %w", id, res[0].Err)
	}
	// A pause is the schedule's: it goes with it, so that a schedule made
	// anew under the ID does not begin paused.
	if err := s.st.SetPause(ctx, slotstore.PauseParams{Job: id, Paused: false}); err != nil {
		return fmt.Errorf("scheduler: deleted schedule %s, but its pause stays: %w", id, err)
	}
	return nil
}

// Get returns the schedule id, or ErrNoSchedule.
func (s *Schedules) Get(ctx context.Context, id string) (Schedule, error) {
	es, err := s.st.Schedules(ctx, slotstore.ScheduleParams{IDs: []string{id}, Limit: 1})
	if err != nil {
		return Schedule{}, fmt.Errorf("scheduler: get schedule %s: %w", id, err)
	}
	if len(es) == 0 {
		return Schedule{}, fmt.Errorf("scheduler: get schedule %s: %w", id, ErrNoSchedule)
	}
	sc, err := scheduleOf(es[0])
	if err != nil {
		return sc, err
	}
	return s.withPauses(ctx, []Schedule{sc})[0], nil
}

// ListSchedules selects schedules, sorted by ID.
type ListSchedules struct {
	Job    string // only those that run this job
	Prefix string // only IDs that begin with it
	After  string // only IDs after it: the next page after the last ID of one
	Limit  int    // at most this many; zero means 100, at most 10,000
}

// List returns a page of schedules.
func (s *Schedules) List(ctx context.Context, p ListSchedules) ([]Schedule, error) {
	es, err := s.st.Schedules(ctx, slotstore.ScheduleParams{Run: p.Job, Prefix: p.Prefix, After: p.After, Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("scheduler: list schedules: %w", err)
	}
	out := make([]Schedule, 0, len(es))
	for _, e := range es {
		sc, err := scheduleOf(e)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return s.withPauses(ctx, out), nil
}

// Pause pauses schedule id, or a job of the configuration (which the API
// may pause, not change), on every replica, with reason.
func (s *Schedules) Pause(ctx context.Context, id, reason string) error {
	return s.setPause(ctx, id, true, reason)
}

// Resume resumes what Pause paused.
func (s *Schedules) Resume(ctx context.Context, id string) error {
	return s.setPause(ctx, id, false, "")
}

func (s *Schedules) setPause(ctx context.Context, id string, paused bool, reason string) error {
	es, err := s.st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{id}, Limit: 1})
	if err != nil {
		return fmt.Errorf("scheduler: pause schedule %s: %w", id, err)
	}
	if paused && (len(es) == 0 || es[0].Deleted || es[0].InForce.Fingerprint == "") {
		return fmt.Errorf("scheduler: pause schedule %s: %w", id, ErrNoSchedule)
	}
	err = s.st.SetPause(ctx, slotstore.PauseParams{Job: id, Paused: paused, By: s.by, Reason: reason})
	s.record(ctx, engine.Act{Kind: map[bool]string{true: "schedule-pause", false: "schedule-resume"}[paused], Target: id,
		Reason: reason, Err: err})
	if err != nil {
		return fmt.Errorf("scheduler: pause schedule %s: %w", id, err)
	}
	return nil
}

// withPauses marks the paused schedules of scs; a failed read of the
// pauses leaves them unmarked.
func (s *Schedules) withPauses(ctx context.Context, scs []Schedule) []Schedule {
	ps, err := s.st.Pauses(ctx)
	if err != nil {
		return scs
	}
	paused := make(map[string]bool, len(ps.Jobs))
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	for i := range scs {
		scs[i].Paused = paused[scs[i].ID]
	}
	return scs
}

// scheduleOf returns the schedule e records, as its spec body says.
func scheduleOf(e slotstore.CatalogEntry) (Schedule, error) {
	j, err := engine.JobOf(e, nil)
	if err != nil {
		return Schedule{}, fmt.Errorf("scheduler: %w", err)
	}
	from, until := j.Schedule.Bounds()
	sc := Schedule{ID: e.Job, Job: e.Run, Schedule: j.Schedule.String(), Params: json.RawMessage(j.Params), Start: from,
		End: until, Version: e.Version, UpdatedAt: e.InForce.Since, UpdatedBy: e.InForce.Replica,
		Created: len(e.Past) == 0 || e.Past[0].Fingerprint == slotstore.DeletedFingerprint && e.Past[0].Until.Equal(e.InForce.Since),
		Policy: Policy{Timezone: j.Schedule.Location().String(), Lease: Duration(j.Lease), Timeout: Duration(j.Timeout),
			// Spelled out, skip too, so that a schedule read and written
			// back keeps it rather than taking the writer's default.
			OnCrash: j.OnCrash, AfterDataLoss: cmp.Or(j.AfterDataLoss, policy.AfterDataLossSkip), MaxAttempts: j.MaxAttempts, StartingDeadline: Duration(j.Deadline), CatchUp: j.CatchUp,
			CatchUpLimit: j.CatchUpLimit, History: Duration(j.History), Jitter: Duration(j.JitterWindow), Overlap: j.Overlap,
			Retries: RetryPolicy{Max: j.Retries.Max, Backoff: Duration(j.Retries.Backoff),
				MaxBackoff: Duration(j.Retries.MaxBackoff)}, PauseAfterFailures: &j.PauseAfterFailures}}
	sc.MaxRuns = j.MaxRuns
	if j.Schedule.Fixed() {
		// Spelled out, the default too: a schedule read and written back
		// keeps its rule, whatever the writer's defaults say.
		d := j.Schedule.DST()
		sc.Policy.DST = DST{Gap: policy.Gap(d.Gap), Repeat: policy.Repeat(d.Repeat)}
	}
	sc.Policy.Except = []string{} // none is none when written back, not the defaults' calendars
	for _, cal := range j.Except {
		sc.Policy.Except = append(sc.Policy.Except, cal.Name)
	}
	return sc, nil
}
