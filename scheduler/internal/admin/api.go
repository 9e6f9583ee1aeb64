package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// api serves the JSON API under /api/: each route needs a role of its
// caller's token (the guard's), reads none unless read_auth.
type api struct {
	e         Engine
	g         *Guard
	storeKind string
	// reads holds a token for each store read in flight, at most maxReads.
	reads chan struct{}
	// schedules reads and writes the schedules held as data; nil for none.
	schedules Schedules
}

func newAPI(e Engine, o Options, g *Guard) *api {
	return &api{e: e, g: g, storeKind: o.StoreKind, reads: make(chan struct{}, maxReads), schedules: o.Schedules}
}

// store returns the store of the Run in progress, its reads bounded by the
// shared places, or answers 503.
func (a *api) store(w http.ResponseWriter) (*boundedStore, bool) {
	r, ok := a.e.Records()
	if !ok {
		httpError(w, http.StatusServiceUnavailable, codeNotRunning, "the scheduler is not running")
		return nil, false
	}
	return &boundedStore{r: r, a: a}, true
}

func (a *api) routes(mux *http.ServeMux) {
	read := func(h http.HandlerFunc) http.HandlerFunc { return a.g.need(a.g.readRole(), h) }
	mux.HandleFunc("GET /api/whoami", read(whoami))
	mux.HandleFunc("GET /api/jobs", read(a.jobs))
	mux.HandleFunc("GET /api/jobs/{job}", read(a.job))
	mux.HandleFunc("GET /api/jobs/{job}/history", read(a.jobHistory))
	mux.HandleFunc("GET /api/jobs/{job}/audit", read(a.jobAudit))
	mux.HandleFunc("GET /api/catalog", read(a.catalog))
	mux.HandleFunc("GET /api/history", read(a.history))
	mux.HandleFunc("GET /api/actions", read(a.actions))
	mux.HandleFunc("GET /api/cluster", read(a.cluster))
	mux.HandleFunc("POST /api/jobs/{job}/trigger", a.g.need(RoleOperator, a.trigger))
	mux.HandleFunc("POST /api/jobs/{job}/backfill", a.g.need(RoleOperator, a.backfill))
	// A job's pause needs operator, the cluster's admin (pause checks).
	mux.HandleFunc("POST /api/pause", a.g.need(RoleOperator, a.pause(true)))
	mux.HandleFunc("POST /api/resume", a.g.need(RoleOperator, a.pause(false)))
	a.scheduleRoutes(mux, read)
	// The page is static, with no data in it: open, so that it can ask
	// for the token the API wants.
	mux.HandleFunc("GET /{$}", dashboard)
}

// trigger claims a manual slot and starts its run on this replica, like a
// scheduled one; it answers once the run has started.
func (a *api) trigger(w http.ResponseWriter, r *http.Request) {
	// Through the live engine, as Trigger during Run: the run is one of
	// Run's, which waits for it at shutdown.
	job := r.PathValue("job")
	// A replica whose spec of the job is not the spec in force runs none
	// of its slots: the store would refuse the claim, so say why first.
	if a.inConflict(r.Context(), w, job) {
		return
	}
	m, err := a.e.Start(r.Context(), job)
	act := engine.Act{Kind: "trigger", Target: job, Err: err}
	if err == nil {
		act.Detail = fmt.Sprintf("slot %s, fence %d, started", m.Slot.UTC().Format(time.RFC3339), m.Fence)
	}
	a.record(r, act)
	switch {
	case errors.Is(err, engine.ErrSpecConflict):
		a.answerConflict(r.Context(), w, job)
		return
	case errors.Is(err, engine.ErrNoJob):
		httpError(w, http.StatusNotFound, codeNoJob, fmt.Sprintf("no such job %q", job))
		return
	case errors.Is(err, engine.ErrNotRunning):
		httpError(w, http.StatusServiceUnavailable, codeNotRunning, "the scheduler is not running")
		return
	case errors.Is(err, engine.ErrBusy):
		httpError(w, http.StatusConflict, codeBusy, err.Error())
		return
	case errors.Is(err, engine.ErrPaused):
		httpError(w, http.StatusConflict, codePaused, err.Error())
		return
	case errors.Is(err, engine.ErrNoFreeSlot):
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, codeNoFreeSlot, err.Error())
		return
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
		return
	}
	slot := m.Slot.UTC().Format(time.RFC3339)
	writeJSON(w, http.StatusAccepted, map[string]any{
		"job": m.Job, "slot": slot, "key": m.Job + "@" + slot, "fence": m.Fence,
	})
}

// record appends act, made by r's caller, to the actions log of the Run's
// store; nothing without a Run.
func (a *api) record(r *http.Request, act engine.Act) {
	if rec, ok := a.e.Records(); ok {
		rec.Record(r.Context(), actorOf(callerOf(r)), act)
	}
}

// inConflict reports whether this replica's spec of job is not the spec in
// force, as the engine knows, and then answers 409 spec_conflict.
func (a *api) inConflict(ctx context.Context, w http.ResponseWriter, job string) bool {
	rec, ok := a.e.Records()
	if !ok {
		return false
	}
	if _, conflict, _ := rec.SpecOf(job); conflict == nil {
		return false
	}
	a.answerConflict(ctx, w, job)
	return true
}

// answerConflict answers a trigger or backfill of job, whose spec on this replica is
// not the spec in force (as the engine knows, or as the store answered its
// claim), naming the spec in force as the catalog has it now.
func (a *api) answerConflict(ctx context.Context, w http.ResponseWriter, job string) {
	own, in, force := "", "(unknown)", ""
	if rec, ok := a.e.Records(); ok {
		s, conflict, _ := rec.SpecOf(job)
		own = s.Fingerprint
		if conflict != nil {
			in = conflict.Fingerprint
		}
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		st := &boundedStore{r: rec, a: a}
		es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{job}})
		a.storeCall(ctx, err)
		if err == nil && len(es) == 1 {
			force = es[0].InForce.Fingerprint
		}
	}
	specConflict(w, job, own, cmp.Or(force, in))
}

// specConflict answers 409 spec_conflict for a trigger or backfill of job, whose spec
// on this replica, own, is not inForce.
func specConflict(w http.ResponseWriter, job, own, inForce string) {
	httpError(w, http.StatusConflict, codeSpecConflict, fmt.Sprintf(
		"%v: %s: this replica's spec %s is not the spec in force %s; it runs none of the job's slots until its configuration carries that spec again (or no live replica carries it)",
		engine.ErrSpecConflict, job, own, inForce))
}

// hasJob reports whether this replica runs a job or schedule named job.
func (a *api) hasJob(job string) bool {
	_, ok := a.e.Job(job)
	return ok
}

// pathJob is the job the request's path names, or answers 404 when the
// configuration has no such job.
func (a *api) pathJob(w http.ResponseWriter, r *http.Request) (string, bool) {
	job := r.PathValue("job")
	if !a.hasJob(job) {
		httpError(w, http.StatusNotFound, codeNoJob, fmt.Sprintf("no such job %q", job))
		return job, false
	}
	return job, true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// The codes of error bodies: stable, for programs; the message is for people.
const (
	codeBadRequest   = "bad_request"
	codeBadRange     = "bad_range"
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeNoJob        = "no_such_job"
	codeNotFound     = "not_found"          // no endpoint at the path
	codeNoMethod     = "method_not_allowed" // the path's endpoints take other methods
	codeBusy         = "busy"
	codePaused       = "paused"
	codeNoFreeSlot   = "no_free_slot"
	codeNotRunning   = "not_running"
	codeStore        = "store_unavailable"
	// The job catalog's.
	codeNotInCatalog   = "not_in_catalog"
	codeSpecConflict   = "spec_conflict"
	codeSpecUnreadable = "spec_unreadable"
)

// httpError answers status with the body {"error": msg, "code": code}.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

// states are the marker states history can be filtered by.
var states = []slotstore.State{slotstore.StateRunning, slotstore.StateDone, slotstore.StateRetrying, slotstore.StateReleased,
	slotstore.StateAbandoned, slotstore.StateSkipped, slotstore.StateReplaced}

// statesText lists states for an error message.
var statesText = func() string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}()
