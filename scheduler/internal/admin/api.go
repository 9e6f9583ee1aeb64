package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// api serves the JSON API under /api/: reads for anyone who can reach the
// port, mutations (trigger, pause, resume) only with the bearer token.
type api struct {
	e     Engine
	token string
}

// store returns the store of the Run in progress, or answers 503.
func (a *api) store(w http.ResponseWriter) (slotstore.Store, bool) {
	st := a.e.Store()
	if st == nil {
		httpError(w, http.StatusServiceUnavailable, codeNotRunning, "the scheduler is not running")
		return nil, false
	}
	return st, true
}

func (a *api) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/jobs", a.jobs)
	mux.HandleFunc("GET /api/history", a.history)
	mux.HandleFunc("POST /api/jobs/{job}/trigger", a.authed(a.trigger))
	mux.HandleFunc("POST /api/pause", a.authed(a.pause(true)))
	mux.HandleFunc("POST /api/resume", a.authed(a.pause(false)))
	mux.HandleFunc("GET /{$}", a.dashboard)
}

// jobView is a job as GET /api/jobs shows it.
type jobView struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Next     string `json:"next,omitempty"`
	Overlap  string `json:"overlap"`
	Lease    string `json:"lease"`
	Timeout  string `json:"timeout"`
	Paused   bool   `json:"paused"`
}

func (a *api) jobs(w http.ResponseWriter, r *http.Request) {
	st, ok := a.store(w)
	if !ok {
		return
	}
	views, _, err := a.jobViews(r.Context(), st)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, views)
}

// jobViews describes every job as the API and the dashboard show it, with
// the pauses read from the store.
func (a *api) jobViews(ctx context.Context, st slotstore.Store) ([]jobView, slotstore.Pauses, error) {
	ps, err := st.Pauses(ctx)
	if err != nil {
		return nil, ps, fmt.Errorf("read pauses: %w", err)
	}
	now := a.e.Now()
	jobs := a.e.Jobs()
	out := make([]jobView, 0, len(jobs))
	for _, j := range jobs {
		v := jobView{Name: j.Name, Schedule: j.Schedule.String(), Timezone: j.Schedule.Location().String(), Overlap: string(j.Overlap),
			Lease: j.Lease.String(), Timeout: j.Timeout.String(), Paused: ps.All || slices.Contains(ps.Jobs, j.Name)}
		if next := j.Schedule.Next(now); !next.IsZero() {
			v.Next = next.UTC().Format(time.RFC3339)
		}
		out = append(out, v)
	}
	return out, ps, nil
}

func (a *api) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			httpError(w, http.StatusBadRequest, codeBadRequest, "limit: want 1 to 10000")
			return
		}
		limit = n
	}
	state := slotstore.State(q.Get("state"))
	if state != "" && !slices.Contains(states, state) {
		httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("state %q: want one of %s", state, statesText))
		return
	}
	st, ok := a.store(w)
	if !ok {
		return
	}
	ms, err := st.History(r.Context(), slotstore.HistoryParams{Job: q.Get("job"), State: state, Limit: limit})
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, codeStore, "read history: "+err.Error())
		return
	}
	out := make([]MarkerView, len(ms))
	for i, m := range ms {
		out[i] = MarkerJSON(m)
	}
	writeJSON(w, http.StatusOK, out)
}

// trigger claims a manual slot and starts its run on this replica, like a
// scheduled one; it answers once the run has started.
func (a *api) trigger(w http.ResponseWriter, r *http.Request) {
	// Through the live engine, as Trigger during Run: the run is one of
	// Run's, which waits for it at shutdown.
	m, err := a.e.Start(r.Context(), r.PathValue("job"))
	switch {
	case errors.Is(err, engine.ErrNoJob):
		httpError(w, http.StatusNotFound, codeNoJob, "no such job")
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

func (a *api) pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		job := r.URL.Query().Get("job")
		if job != "" && !a.e.HasJob(job) {
			httpError(w, http.StatusNotFound, codeNoJob, "no such job")
			return
		}
		st, ok := a.store(w)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := st.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: paused}); err != nil {
			httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
			return
		}
		a.e.PausesChanged() // this replica obeys at its next slot
		ps, err := st.Pauses(ctx)
		if err != nil {
			httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
			return
		}
		a.e.Log().Info("pauses changed", "job", job, "paused", paused, "by", "http")
		writeJSON(w, http.StatusOK, pausesView{All: ps.All, Jobs: ps.Jobs})
	}
}

// authed lets a request through only with "Authorization: Bearer <token>"
// matching http.token; with no token configured, mutations are refused.
func (a *api) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := a.token
		if token == "" {
			httpError(w, http.StatusForbidden, codeForbidden, "mutations are disabled: set http.token")
			return
		}
		// The scheme is case-insensitive (RFC 9110), the token is not.
		scheme, got, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		got = strings.TrimLeft(got, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="slotcron"`)
			httpError(w, http.StatusUnauthorized, codeUnauthorized, "bad or missing bearer token")
			return
		}
		next(w, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// The codes of error bodies: stable, for programs; the message is for people.
const (
	codeBadRequest   = "bad_request"
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeNoJob        = "no_such_job"
	codeBusy         = "busy"
	codePaused       = "paused"
	codeNoFreeSlot   = "no_free_slot"
	codeNotRunning   = "not_running"
	codeStore        = "store_unavailable"
)

// httpError answers status with the body {"error": msg, "code": code}.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

// pausesView is what is paused, as pause and resume answer it.
type pausesView struct {
	All  bool     `json:"all"`
	Jobs []string `json:"jobs"`
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
