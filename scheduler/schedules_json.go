package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
)

// scheduleAPI serves the HTTP API's schedules from s.
type scheduleAPI struct{ s *Schedules }

var _ admin.Schedules = scheduleAPI{}

func (a scheduleAPI) Put(ctx context.Context, by string, j admin.ScheduleJSON, create bool) (admin.ScheduleJSON, error) {
	sc, err := scheduleFromJSON(j)
	if err != nil {
		return admin.ScheduleJSON{}, err
	}
	var out Schedule
	if create {
		out, err = a.s.By(by).Create(ctx, sc)
	} else {
		out, err = a.s.By(by).Put(ctx, sc)
	}
	if err != nil {
		return admin.ScheduleJSON{}, invalidOf(err)
	}
	return scheduleJSON(out), nil
}

func (a scheduleAPI) Get(ctx context.Context, id string) (admin.ScheduleJSON, error) {
	sc, err := a.s.Get(ctx, id)
	return scheduleJSON(sc), err
}

func (a scheduleAPI) List(ctx context.Context, q admin.ScheduleQuery) ([]admin.ScheduleJSON, error) {
	scs, err := a.s.List(ctx, ListSchedules{Job: q.Job, Prefix: q.Prefix, After: q.After, Limit: q.Limit})
	out := make([]admin.ScheduleJSON, len(scs))
	for i, sc := range scs {
		out[i] = scheduleJSON(sc)
	}
	return out, err
}

func (a scheduleAPI) Delete(ctx context.Context, by, id string, version int64) error {
	return a.s.By(by).Delete(ctx, id, version)
}

func (a scheduleAPI) SetPause(ctx context.Context, by, id, reason string, paused bool) error {
	return a.s.By(by).setPause(ctx, id, paused, reason)
}

// invalidOf words a schedule's validation errors as the API answers them.
func invalidOf(err error) error {
	var es ScheduleErrors
	if !errors.As(err, &es) {
		return err
	}
	out := make(admin.InvalidSchedule, len(es))
	for i, e := range es {
		out[i] = admin.FieldError{Field: e.Field, Msg: e.Msg}
	}
	return out
}

// scheduleFromJSON reads a schedule as the API writes it; a field that
// does not parse is refused, named.
func scheduleFromJSON(j admin.ScheduleJSON) (Schedule, error) {
	sc := Schedule{ID: j.ID, Job: j.Job, Schedule: j.Schedule, Params: j.Params, Version: j.Version,
		Policy: Policy{Timezone: j.Timezone, OnCrash: policy.OnCrash(j.OnCrash), Overlap: policy.Overlap(j.Overlap),
			AfterDataLoss: policy.AfterDataLoss(j.AfterDataLoss),
			CatchUp:       policy.CatchUp(j.CatchUp), MaxAttempts: j.MaxAttempts, CatchUpLimit: j.CatchUpLimit,
			PauseAfterFailures: j.PauseAfterFailures, Except: j.Except}, MaxRuns: j.MaxRuns}
	if j.DST != nil {
		sc.Policy.DST = DST{Gap: policy.Gap(j.DST.Gap), Repeat: policy.Repeat(j.DST.Repeat)}
	}
	var errs admin.InvalidSchedule
	dur := func(field, v string, to *Duration) {
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, admin.FieldError{Field: field, Msg: fmt.Sprintf("invalid duration %q (use a number with a unit: 500ms, 15s, 10m, 168h)", v)})
		case d < 0:
			errs = append(errs, admin.FieldError{Field: field, Msg: fmt.Sprintf("negative duration %q", v)})
		}
		*to = Duration(d)
	}
	at := func(field, v string, to *time.Time) {
		if v == "" {
			return
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, admin.FieldError{Field: field, Msg: fmt.Sprintf("%q: an RFC 3339 instant, such as 2026-12-01T09:00:00Z", v)})
		}
		*to = t
	}
	dur("lease", j.Lease, &sc.Policy.Lease)
	dur("timeout", j.Timeout, &sc.Policy.Timeout)
	dur("starting_deadline", j.StartingDeadline, &sc.Policy.StartingDeadline)
	dur("history", j.History, &sc.Policy.History)
	dur("jitter", j.Jitter, &sc.Policy.Jitter)
	if r := j.Retries; r != nil {
		sc.Policy.Retries.Max = r.Max
		dur("retries.backoff", r.Backoff, &sc.Policy.Retries.Backoff)
		dur("retries.max_backoff", r.MaxBackoff, &sc.Policy.Retries.MaxBackoff)
	}
	at("start", j.Start, &sc.Start)
	at("end", j.End, &sc.End)
	if len(errs) > 0 {
		return Schedule{}, errs
	}
	return sc, nil
}

// scheduleJSON is sc as the API reads it.
func scheduleJSON(sc Schedule) admin.ScheduleJSON {
	p := sc.Policy
	j := admin.ScheduleJSON{ID: sc.ID, Job: sc.Job, Schedule: sc.Schedule, Timezone: p.Timezone, Params: sc.Params,
		Lease: durText(p.Lease), Timeout: durText(p.Timeout), StartingDeadline: durText(p.StartingDeadline),
		History: durText(p.History), Jitter: durText(p.Jitter), OnCrash: string(p.OnCrash), Overlap: string(p.Overlap),
		AfterDataLoss: string(p.AfterDataLoss), CatchUp: string(p.CatchUp), MaxAttempts: p.MaxAttempts, CatchUpLimit: p.CatchUpLimit,
		PauseAfterFailures: p.PauseAfterFailures, Version: sc.Version, UpdatedBy: sc.UpdatedBy, Paused: sc.Paused,
		Retries: &admin.RetriesJSON{Max: p.Retries.Max, Backoff: durText(p.Retries.Backoff), MaxBackoff: durText(p.Retries.MaxBackoff)}}
	j.Start, j.End, j.Created = instant(sc.Start), instant(sc.End), sc.Created
	j.UpdatedAt = instant(sc.UpdatedAt)
	if p.DST != (DST{}) {
		j.DST = &admin.DSTJSON{Gap: string(p.DST.Gap), Repeat: string(p.DST.Repeat)}
	}
	j.Except, j.MaxRuns = p.Except, sc.MaxRuns
	if j.Except == nil {
		j.Except = []string{}
	}
	return j
}

func durText(d Duration) string { return d.String() }

func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
