// Schedules held as data, as the engine reads them: a schedule's spec body
// is the SpecBody of its resolved JobSpec, params and bounds included, so
// every replica runs it alike from what the store holds (slotstore's
// package documentation, Schedules held as data).

package engine

import (
	"fmt"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// ScheduleSpec returns the spec a schedule held as data is written with:
// the body of j (Run set, Params JSON or nil) and the body's fingerprint.
func ScheduleSpec(j JobSpec) slotstore.Spec { return specOfBody(BodyOf(j)) }

// JobOf returns the job of e, a live schedule's catalog entry, as its spec
// body says, running fn. An error says which field this build cannot read.
func JobOf(e slotstore.CatalogEntry, fn jobs.Func) (JobSpec, error) {
	b, ok := ParseBody(e.InForce.Body)
	if !ok {
		return JobSpec{}, fmt.Errorf("schedule %s: spec %s: not a spec body this build reads", e.Job, e.InForce.Fingerprint)
	}
	return jobOfBody(e, b, fn, nil)
}

// jobOfBody is JobOf of e's body b, its schedule sched when not nil (b's
// parsed already).
func jobOfBody(e slotstore.CatalogEntry, b SpecBody, fn jobs.Func, sched *schedule.Schedule) (JobSpec, error) {
	j := JobSpec{Name: e.Job, Run: e.Run, Fn: fn, OnCrash: policy.OnCrash(b.OnCrash), MaxAttempts: b.MaxAttempts,
		CatchUp: policy.CatchUp(b.CatchUp), CatchUpLimit: b.CatchUpLimit, Overlap: policy.Overlap(b.Overlap),
		Retries: Retries{Max: b.Retries}, PauseAfterFailures: b.PauseAfterFailures, Except: b.Except, MaxRuns: b.MaxRuns,
		AfterDataLoss: policy.AfterDataLoss(b.AfterDataLoss)}
	if len(b.ParamsJSON) > 0 {
		j.Params = b.ParamsJSON
	}
	var errs []error
	dur := func(field, v string, to *time.Duration) {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", field, v, err))
		}
		*to = d
	}
	dur("lease", b.Lease, &j.Lease)
	dur("timeout", b.Timeout, &j.Timeout)
	dur("starting_deadline", b.StartingDeadline, &j.Deadline)
	dur("history", b.History, &j.History)
	dur("jitter", b.Jitter, &j.Jitter)
	dur("retry_backoff", b.RetryBackoff, &j.Retries.Backoff)
	dur("retry_max_backoff", b.RetryMaxBackoff, &j.Retries.MaxBackoff)
	if b.JitterWindow != "" {
		dur("jitter_window", b.JitterWindow, &j.JitterWindow)
	}
	if sched == nil {
		var err error
		if sched, err = b.Slots(); err != nil {
			errs = append(errs, err)
		}
	}
	if !j.OnCrash.Valid() || !j.CatchUp.Valid() || !j.Overlap.Valid() || j.AfterDataLoss != "" && !j.AfterDataLoss.Valid() {
		errs = append(errs, fmt.Errorf("policy on_crash %q, catch_up %q, overlap %q, after_data_loss %q", b.OnCrash, b.CatchUp,
			b.Overlap, b.AfterDataLoss))
	}
	if len(errs) > 0 {
		return JobSpec{}, fmt.Errorf("schedule %s: spec %s: %w", e.Job, e.InForce.Fingerprint, errs[0])
	}
	j.Schedule = sched
	return j, nil
}

// Slots returns the schedule b's slots follow: its spec in its zone,
// within its start and end when it has them.
func (b SpecBody) Slots() (*schedule.Schedule, error) {
	sched, err := schedule.Parse(b.Schedule, b.Zone)
	if err != nil {
		return nil, err
	}
	if b.DSTGap != "" || b.DSTRepeat != "" {
		if sched, err = sched.WithDST(schedule.DST{Gap: schedule.Gap(b.DSTGap), Repeat: schedule.Repeat(b.DSTRepeat)}); err != nil {
			return nil, err
		}
	}
	from, err := unstamp(b.Start)
	if err != nil {
		return nil, err
	}
	until, err := unstamp(b.End)
	if err != nil {
		return nil, err
	}
	if from.IsZero() && until.IsZero() {
		return sched, nil
	}
	return sched.Within(from, until), nil
}

// stamp is t in RFC 3339, UTC, or "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// unstamp reads a stamp back.
func unstamp(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bound %q: %w", s, err)
	}
	return t, nil
}
