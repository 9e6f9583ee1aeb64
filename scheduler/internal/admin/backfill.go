package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// backfillView is a backfill's plan as POST /api/jobs/{job}/backfill
// answers it.
type backfillView struct {
	Job string `json:"job"`
	// From and To are the range planned, both included. To is the to
	// asked for or, when the plan stops before it (its newest slots may
	// still start on schedule, within starting_deadline and jitter), the
	// last slot planned; ToRequested is then the to asked for.
	From        string `json:"from"`
	To          string `json:"to"`
	ToRequested string `json:"to_requested,omitempty"`
	// DryRun: only planned. Started: its slots to run are running, one
	// after another, on the replica that answered; how each ends is in the
	// job's history.
	DryRun  bool               `json:"dry_run"`
	Started bool               `json:"started"`
	ToRun   int                `json:"to_run"`
	Slots   []backfillSlotView `json:"slots"`
}

// backfillSlotView is one slot of a backfill's plan: "run" (it never ran)
// or "leave" (it has a marker in State, for Reason).
type backfillSlotView struct {
	Slot   string `json:"slot"`
	Key    string `json:"key"`
	Action string `json:"action"`
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// backfill answers POST /api/jobs/{job}/backfill. Parameters (query or
// JSON body): from and to (RFC 3339, both included; to defaults to now, as
// the CLI's --to does) and dry_run. A dry run
// answers 200 with the plan; otherwise the plan's slots to run start on
// this replica and the answer is 202 (200 when there is nothing to run).
func (a *api) backfill(w http.ResponseWriter, r *http.Request) {
	job, ok := a.pathJob(w, r)
	if !ok {
		return
	}
	ps, err := postParams(r, field{name: "from"}, field{name: "to"}, field{name: "dry_run", isBool: true})
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, "backfill: "+err.Error())
		return
	}
	p := engine.BackfillParams{To: time.Now()}
	for _, f := range []struct {
		name string
		at   *time.Time
	}{{"from", &p.From}, {"to", &p.To}} {
		v, given := ps[f.name]
		if f.name == "to" && !given {
			continue // now, as the CLI's --to
		}
		if v == "" {
			msg := "backfill: from is required (RFC 3339, such as 2026-11-29T02:00:00Z)"
			if f.name == "to" {
				msg = "backfill: to is empty; leave it out to backfill up to now"
			}
			httpError(w, http.StatusBadRequest, codeBadRequest, msg)
			return
		}
		if *f.at, err = time.Parse(time.RFC3339, v); err != nil {
			httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("backfill: %s %q: want an RFC 3339 time such as 2026-11-29T02:00:00Z", f.name, v))
			return
		}
	}
	if p.DryRun, err = boolParam(ps, "dry_run"); err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, "backfill: "+err.Error())
		return
	}
	// Planning reads the store within readTimeout, as every read does; the
	// runs it starts are the Run's, not this request's.
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	if !p.DryRun && a.inConflict(ctx, w, job) { // its claims would be refused
		return
	}
	plan, err := a.e.StartBackfill(ctx, job, p)
	a.recordBackfill(r, job, p, plan, err)
	switch {
	case errors.Is(err, engine.ErrNoJob):
		httpError(w, http.StatusNotFound, codeNoJob, fmt.Sprintf("no such job %q", job))
		return
	case errors.Is(err, engine.ErrBackfillRange):
		httpError(w, http.StatusBadRequest, codeBadRange, err.Error())
		return
	case errors.Is(err, engine.ErrPaused):
		httpError(w, http.StatusConflict, codePaused, err.Error())
		return
	case errors.Is(err, engine.ErrNotRunning):
		httpError(w, http.StatusServiceUnavailable, codeNotRunning, "the scheduler is not running")
		return
	case err != nil:
		a.storeCall(ctx, err)
		httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
		return
	}
	v := backfillView{Job: job, From: rfc3339(p.From), To: rfc3339(p.To), DryRun: p.DryRun, ToRun: plan.ToRun(),
		Slots: make([]backfillSlotView, len(plan.Slots))}
	if last, ok := a.plannedTo(job, plan, p.To); ok {
		v.To, v.ToRequested = rfc3339(last), v.To
	}
	for i, s := range plan.Slots {
		slot := s.Slot.UTC().Format(time.RFC3339)
		v.Slots[i] = backfillSlotView{Slot: slot, Key: job + "@" + slot, Action: s.Action, State: string(s.State), Reason: s.Reason}
	}
	code := http.StatusOK
	if !p.DryRun && v.ToRun > 0 {
		v.Started, code = true, http.StatusAccepted
		a.e.Log().Info("backfill started", "job", job, "from", v.From, "to", v.To, "slots", v.ToRun, "remote", r.RemoteAddr)
	}
	writeJSON(w, code, v)
}

// plannedTo returns the last slot of plan when the plan stops before to:
// the job's schedule has a slot after it that is not after to.
func (a *api) plannedTo(job string, plan engine.BackfillResult, to time.Time) (time.Time, bool) {
	j, found := a.e.Job(job)
	if !found || len(plan.Slots) == 0 {
		return time.Time{}, false
	}
	last := plan.Slots[len(plan.Slots)-1].Slot
	next := j.Schedule.Next(last)
	return last, !next.IsZero() && !next.After(to)
}

// recordBackfill records a backfill of job over p that planned plan and
// answered err in the actions log; a dry run changes nothing to record.
func (a *api) recordBackfill(r *http.Request, job string, p engine.BackfillParams, plan engine.BackfillResult, err error) {
	if p.DryRun {
		return
	}
	a.record(r, engine.Act{Kind: "backfill", Target: job, Err: err, Detail: fmt.Sprintf("from %s to %s: %d slots to run of %d",
		p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339), plan.ToRun(), len(plan.Slots))})
}
