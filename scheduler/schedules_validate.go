package scheduler

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// ScheduleError is a problem of a schedule refused before anything was
// written: the field (as the HTTP API and the CLI name it: id, job,
// schedule, timezone, lease, retries.backoff...) and what is wrong with it.
type ScheduleError struct {
	ID    string
	Field string
	Msg   string
}

func (e *ScheduleError) Error() string { return e.Field + ": " + e.Msg }

// ScheduleErrors is every problem of one schedule, in field order.
type ScheduleErrors []*ScheduleError

func (es ScheduleErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "; ")
}

// Unwrap returns each problem, so errors.As finds a *ScheduleError.
func (es ScheduleErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// toWrite validates sc and returns its write under precondition ifVersion.
func (s *Schedules) toWrite(sc Schedule, ifVersion int64) (slotstore.ScheduleWrite, error) {
	j, err := s.cfg.resolveSchedule(sc, s.reg)
	if err != nil {
		return slotstore.ScheduleWrite{}, err
	}
	return slotstore.ScheduleWrite{ID: sc.ID, Run: sc.Job, Spec: engine.ScheduleSpec(j), IfVersion: ifVersion}, nil
}

// resolveSchedule checks sc as a job of the configuration is checked, with
// the defaults of the configuration's job named like sc.Job, then of the
// configuration, and returns it resolved: what its spec is made of.
func (c *Config) resolveSchedule(sc Schedule, reg *jobs.Registry) (engine.JobSpec, error) {
	var errs ScheduleErrors
	fail := func(field, msg string) { errs = append(errs, &ScheduleError{ID: sc.ID, Field: field, Msg: msg}) }
	checkScheduleID(sc.ID, fail)
	if sc.Job == "" {
		fail("job", "the registered job to run is required")
	}
	if len(sc.Params) > maxParams {
		fail("params", fmt.Sprintf("%d bytes (at most %d)", len(sc.Params), maxParams))
	} else if len(sc.Params) > 0 && !json.Valid(sc.Params) {
		fail("params", "not one JSON value")
	}
	if !sc.Start.IsZero() && !sc.End.IsZero() && sc.End.Before(sc.Start) {
		fail("end", fmt.Sprintf("%s is before start %s", sc.End.UTC().Format(time.RFC3339), sc.Start.UTC().Format(time.RFC3339)))
	}
	defaults := c.Defaults.merge(builtin)
	c.keepZeros(&defaults, "defaults")
	if own, ok := c.jobOfRun(sc.Job); ok {
		defaults = own.Policy.merge(defaults)
	}
	var j engine.JobSpec
	if len(errs) == 0 || sc.Job != "" {
		sub := &Config{Calendars: c.Calendars, Jobs: map[string]JobConfig{sc.ID: {Schedule: sc.Schedule, Run: sc.Job,
			Policy: sc.Policy, Active: Active{From: sc.Start, Until: sc.End}, MaxRuns: sc.MaxRuns}}}
		resolved, ok := sub.resolveJob(sc.ID, reg, defaults, map[specKey]parsedSpec{}, func(e *ConfigError) {
			switch field := fieldOf(e.Key, sc.ID); {
			case field == "id" && e.Msg == "schedule is required":
				fail("schedule", "a cron spec or @every is required")
			case field != "id" || !strings.Contains(e.Msg, "job name"): // the ID's own checks are checkScheduleID's
				fail(field, e.Msg)
			}
		})
		if ok {
			j = resolved
		}
	}
	if len(errs) > 0 {
		return engine.JobSpec{}, errs
	}
	j.Run, j.Params, j.ParamsWritten = sc.Job, nil, nil
	if len(sc.Params) > 0 {
		j.Params = []byte(sc.Params)
	}
	j.JitterWindow = sc.Policy.Jitter.D()
	if j.JitterWindow == 0 {
		j.JitterWindow = defaults.Jitter.D()
	}
	if j.Schedule.Next(time.Now()).IsZero() {
		fail("end", "the schedule has no slot between now and its end")
	}
	// What is written must read back: a spec no replica can read runs nowhere.
	sp := engine.ScheduleSpec(j)
	if _, err := engine.JobOf(slotstore.CatalogEntry{Job: sc.ID, Run: sc.Job, InForce: slotstore.SpecRecord{Fingerprint: sp.Fingerprint, Body: sp.Body}}, nil); err != nil {
		fail("schedule", "its spec does not read back: "+err.Error())
	}
	// The store's own bounds on a lease (etcd's request timeout), as a job
	// of the file meets them.
	c.checkStoreAgainstLease(j.Lease, "schedule "+sc.ID, func(e *ConfigError) { fail("lease", e.Msg) })
	if len(errs) > 0 {
		return engine.JobSpec{}, errs
	}
	return j, nil
}

// kept is what a Scheduler keeps of c once its jobs are resolved: every
// setting, and of the jobs only the one per registered job that a schedule
// held as data takes its policies from (jobOfRun), without the file's
// syntax tree. A configuration of 100k jobs is otherwise kept whole for as
// long as the Scheduler lives, most of its heap.
func (c *Config) kept() *Config {
	k := *c
	k.src = nil
	k.Jobs = make(map[string]JobConfig)
	first := make(map[string]string) // each registered job's first job by name that runs it
	for name, jc := range c.Jobs {
		switch {
		case jc.Run == "" || jc.Run == name:
			k.Jobs[name] = jc // jobOfRun(name) finds it first
		case first[jc.Run] == "" || name < first[jc.Run]:
			first[jc.Run] = name
		}
	}
	for run, name := range first {
		if _, ok := k.Jobs[run]; !ok {
			k.Jobs[run] = c.Jobs[name]
		}
	}
	return &k
}

// jobOfRun is the configuration's job whose policies a schedule of the
// registered job run defaults to: the job named run if it runs run, else
// the first by name that runs it.
func (c *Config) jobOfRun(run string) (JobConfig, bool) {
	if jc, ok := c.Jobs[run]; ok && (jc.Run == "" || jc.Run == run) {
		return jc, true
	}
	names := make([]string, 0, len(c.Jobs))
	for name, jc := range c.Jobs {
		if jc.Run == run {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return JobConfig{}, false
	}
	slices.Sort(names)
	return c.Jobs[names[0]], true
}

// checkScheduleID refuses an ID the store, run keys or URLs cannot carry.
func checkScheduleID(id string, fail func(field, msg string)) {
	switch {
	case id == "" || len(id) > 200:
		fail("id", fmt.Sprintf("%q: 1 to 200 bytes are required", id))
	case id == "." || id == "..":
		fail("id", fmt.Sprintf("%q cannot be opened from the dashboard (browsers drop it from URLs)", id))
	default:
		for i := 0; i < len(id); i++ {
			if c := id[i]; c < 0x21 || c > 0x7e || c == '@' || c == '{' || c == '}' {
				fail("id", fmt.Sprintf("%q: printable ASCII without spaces, '@' or braces", id))
				return
			}
		}
	}
}

// fieldOf is the field of a schedule a configuration error's key names
// (jobs.ID.retries.backoff → retries.backoff; jobs.ID.run → job).
func fieldOf(key, id string) string {
	field := strings.TrimPrefix(strings.TrimPrefix(key, "jobs."+id), ".")
	switch field {
	case "":
		return "id"
	case "run":
		return "job"
	case "active.from":
		return "start"
	case "active.until":
		return "end"
	}
	return field
}
