package admin

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// storeSchedules serves the API's schedules straight from a store, for the
// admin's own tests: the scheduler's, which validates against the
// configuration and the registry, is not importable here. It takes the
// schedule, the zone and params and gives every policy a fixed value.
type storeSchedules struct{ st slotstore.Store }

func (f storeSchedules) Put(ctx context.Context, by string, s ScheduleJSON, create bool) (ScheduleJSON, error) {
	sched, err := schedule.Parse(s.Schedule, s.Timezone)
	if err != nil {
		return ScheduleJSON{}, InvalidSchedule{{Field: "schedule", Msg: err.Error()}}
	}
	j := engine.JobSpec{Name: s.ID, Run: s.Job, Schedule: sched, Params: s.Params, Lease: 15 * time.Second, Timeout: time.Minute,
		Deadline: time.Minute, History: 24 * time.Hour, OnCrash: policy.OnCrashRetry, Overlap: policy.OverlapAllow,
		CatchUp: policy.CatchUpNone}
	v := s.Version
	switch {
	case create:
		v = 0
	case v == 0:
		v = slotstore.AnyVersion
	}
	res, err := f.st.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: by,
		Writes: []slotstore.ScheduleWrite{{ID: s.ID, Run: s.Job, Spec: engine.ScheduleSpec(j), IfVersion: v}}})
	if err != nil {
		return ScheduleJSON{}, err
	}
	if res[0].Err != nil {
		return ScheduleJSON{}, res[0].Err
	}
	return jsonOf(res[0].Entry), nil
}

func (f storeSchedules) Get(ctx context.Context, id string) (ScheduleJSON, error) {
	es, err := f.st.Schedules(ctx, slotstore.ScheduleParams{IDs: []string{id}})
	if err != nil {
		return ScheduleJSON{}, err
	}
	if len(es) == 0 {
		return ScheduleJSON{}, slotstore.ErrNoSchedule
	}
	out := jsonOf(es[0])
	ps, err := f.st.Pauses(ctx)
	if err == nil {
		for _, j := range ps.Jobs {
			out.Paused = out.Paused || j == id
		}
	}
	return out, err
}

func (f storeSchedules) List(ctx context.Context, q ScheduleQuery) ([]ScheduleJSON, error) {
	es, err := f.st.Schedules(ctx, slotstore.ScheduleParams{Run: q.Job, Prefix: q.Prefix, After: q.After, Limit: q.Limit})
	out := make([]ScheduleJSON, len(es))
	for i, e := range es {
		out[i] = jsonOf(e)
	}
	return out, err
}

func (f storeSchedules) Delete(ctx context.Context, by, id string, version int64) error {
	if version == 0 {
		version = slotstore.AnyVersion
	}
	res, err := f.st.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: by,
		Writes: []slotstore.ScheduleWrite{{ID: id, Delete: true, IfVersion: version}}})
	if err != nil {
		return err
	}
	return res[0].Err
}

func (f storeSchedules) SetPause(ctx context.Context, by, id, reason string, paused bool) error {
	if id == "" {
		return errors.New("no id")
	}
	return f.st.SetPause(ctx, slotstore.PauseParams{Job: id, Paused: paused, By: by, Reason: reason})
}

// jsonOf is e as the API shows a schedule.
func jsonOf(e slotstore.CatalogEntry) ScheduleJSON {
	j, err := engine.JobOf(e, nil)
	if err != nil {
		return ScheduleJSON{ID: e.Job, Job: e.Run}
	}
	return ScheduleJSON{ID: e.Job, Job: e.Run, Schedule: j.Schedule.String(), Timezone: j.Schedule.Location().String(),
		Params: json.RawMessage(j.Params), Lease: j.Lease.String(), Timeout: j.Timeout.String(),
		StartingDeadline: j.Deadline.String(), Overlap: string(j.Overlap), CatchUp: string(j.CatchUp), OnCrash: string(j.OnCrash),
		Version: e.Version, UpdatedBy: e.InForce.Replica, UpdatedAt: e.InForce.Since.UTC().Format(time.RFC3339),
		Created: len(e.Past) == 0}
}
