package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// Schedules is what the API needs of the schedules held as data: the
// scheduler's, which validates what it writes (InvalidSchedule) and answers
// slotstore's ErrNoSchedule, ErrVersionMismatch and ErrNotSchedule.
type Schedules interface {
	// Put writes s by by: a create when create, else a create or a replace
	// (at s.Version when not zero).
	Put(ctx context.Context, by string, s ScheduleJSON, create bool) (ScheduleJSON, error)
	Get(ctx context.Context, id string) (ScheduleJSON, error)
	List(ctx context.Context, q ScheduleQuery) ([]ScheduleJSON, error)
	// Delete deletes id at version (0: any).
	Delete(ctx context.Context, by, id string, version int64) error
	SetPause(ctx context.Context, by, id, reason string, paused bool) error
}

// ScheduleQuery selects a page of schedules, sorted by ID.
type ScheduleQuery struct {
	Job, Prefix, After string
	Limit              int
}

// ScheduleJSON is a schedule held as data as the API reads and writes it.
// Durations are Go duration strings ("15s"), instants RFC 3339; a field
// left out takes the job's policy when the schedule is written.
type ScheduleJSON struct {
	ID                 string          `json:"id"`
	Job                string          `json:"job"`
	Schedule           string          `json:"schedule"`
	Timezone           string          `json:"timezone,omitempty"`
	Params             json.RawMessage `json:"params,omitempty"`
	Start              string          `json:"start,omitempty"`
	End                string          `json:"end,omitempty"`
	Lease              string          `json:"lease,omitempty"`
	Timeout            string          `json:"timeout,omitempty"`
	StartingDeadline   string          `json:"starting_deadline,omitempty"`
	History            string          `json:"history,omitempty"`
	Jitter             string          `json:"jitter,omitempty"`
	OnCrash            string          `json:"on_crash,omitempty"`
	AfterDataLoss      string          `json:"after_data_loss,omitempty"`
	Overlap            string          `json:"overlap,omitempty"`
	CatchUp            string          `json:"catch_up,omitempty"`
	MaxAttempts        int             `json:"max_attempts,omitempty"`
	CatchUpLimit       int             `json:"catch_up_limit,omitempty"`
	Retries            *RetriesJSON    `json:"retries,omitempty"`
	PauseAfterFailures *int            `json:"pause_after_failures,omitempty"`
	// DST is a fixed-time schedule's rule for the wall times a clock
	// change skips or repeats; left out for the default (gap shift,
	// repeat first). As read, both parts are spelled out.
	DST *DSTJSON `json:"dst,omitempty"`
	// Except names the configuration's calendars whose dates the schedule
	// skips; left out of a put, those its job's defaults name, and [] none.
	// As read, the schedule's own: [] for none, so a read put back is the
	// same schedule.
	Except []string `json:"except"`
	// MaxRuns ends the schedule after its first MaxRuns slots counted
	// from Start, which it requires; as read, End is the end it puts
	// when that is the earlier.
	MaxRuns int `json:"max_runs,omitempty"`
	// Version: as read, the schedule's; in a put, the version it must be
	// at (0 or left out: any).
	Version int64 `json:"version,omitempty"`
	// Read only: when and by whom it was last written, whether paused.
	UpdatedAt string `json:"updated_at,omitempty"`
	UpdatedBy string `json:"updated_by,omitempty"`
	Paused    bool   `json:"paused"`
	// Created says, of a put's answer, that the schedule did not exist
	// (or was deleted) before it: 201 rather than 200.
	Created bool `json:"-"`
}

// RetriesJSON is a schedule's retry policy.
type RetriesJSON struct {
	Max        int    `json:"max"`
	Backoff    string `json:"backoff,omitempty"`
	MaxBackoff string `json:"max_backoff,omitempty"`
}

// DSTJSON is a schedule's DST rule: gap shift or skip, repeat first or
// both.
type DSTJSON struct {
	Gap    string `json:"gap,omitempty"`
	Repeat string `json:"repeat,omitempty"`
}

// FieldError is one problem of a schedule refused.
type FieldError struct {
	Field string `json:"field"`
	Msg   string `json:"error"`
}

// InvalidSchedule is every problem of a schedule refused before anything
// was written.
type InvalidSchedule []FieldError

func (e InvalidSchedule) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Field + ": " + f.Msg
	}
	return strings.Join(parts, "; ")
}

// The codes of the schedules' errors.
const (
	codeInvalidSchedule = "invalid_schedule"
	codeNoSchedule      = "no_such_schedule"
	codeVersionMismatch = "version_mismatch"
	codeNotSchedule     = "not_a_schedule"
	codeNoSchedules     = "no_schedules"
)

// scheduleRoutes adds the routes of /api/schedules, the reads through read:
// a schedule's pause needs operator, its writes admin.
func (a *api) scheduleRoutes(mux *http.ServeMux, read func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("GET /api/schedules", read(a.withSchedules(a.listSchedules)))
	mux.HandleFunc("GET /api/schedules/{id}", read(a.withSchedules(a.getSchedule)))
	mux.HandleFunc("POST /api/schedules", a.g.need(RoleAdmin, a.withSchedules(a.putSchedule(true))))
	mux.HandleFunc("PUT /api/schedules/{id}", a.g.need(RoleAdmin, a.withSchedules(a.putSchedule(false))))
	mux.HandleFunc("DELETE /api/schedules/{id}", a.g.need(RoleAdmin, a.withSchedules(a.deleteSchedule)))
	mux.HandleFunc("POST /api/schedules/{id}/pause", a.g.need(RoleOperator, a.withSchedules(a.pauseSchedule(true))))
	mux.HandleFunc("POST /api/schedules/{id}/resume", a.g.need(RoleOperator, a.withSchedules(a.pauseSchedule(false))))
}

// withSchedules answers 503 while the replica serves no schedules (no Run
// in progress).
func (a *api) withSchedules(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.schedules == nil {
			httpError(w, http.StatusServiceUnavailable, codeNoSchedules, "this replica serves no schedules")
			return
		}
		next(w, r)
	}
}

func (a *api) getSchedule(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	s, err := a.schedules.Get(ctx, r.PathValue("id"))
	if err != nil {
		a.scheduleError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// putSchedule answers POST /api/schedules (a create: the body names the
// id; 409 if it exists) and PUT /api/schedules/{id} (a create or a
// replace; the version to expect in the body's version or If-Match).
func (a *api) putSchedule(create bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var s ScheduleJSON
		if err := decodeBody(r, &s); err != nil {
			httpError(w, http.StatusBadRequest, codeBadRequest, "schedule: "+err.Error())
			return
		}
		if !create {
			if id := r.PathValue("id"); s.ID == "" {
				s.ID = id
			} else if s.ID != id {
				httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("schedule: id %q in the body, %q in the path", s.ID, id))
				return
			}
			v, err := ifMatch(r, s.Version)
			if err != nil {
				httpError(w, http.StatusBadRequest, codeBadRequest, "schedule: "+err.Error())
				return
			}
			s.Version = v
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		out, err := a.schedules.Put(ctx, writer(r), s, create)
		if err != nil {
			a.scheduleError(w, err)
			return
		}
		code := http.StatusOK
		if out.Created {
			code = http.StatusCreated
		}
		w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(out.Version, 10)))
		writeJSON(w, code, out)
	}
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	v, err := ifMatch(r, 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, "delete: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	id := r.PathValue("id")
	if err := a.schedules.Delete(ctx, writer(r), id, v); err != nil {
		a.scheduleError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": id})
}

// pauseSchedule answers POST /api/schedules/{id}/pause (reason required)
// and .../resume.
func (a *api) pauseSchedule(paused bool) http.HandlerFunc {
	verb := map[bool]string{true: "pause", false: "resume"}[paused]
	return func(w http.ResponseWriter, r *http.Request) {
		ps, err := postParams(r, field{name: "reason"}, field{name: "by"})
		if err != nil {
			httpError(w, http.StatusBadRequest, codeBadRequest, verb+": "+err.Error())
			return
		}
		reason, by, ok := readPauseNote(w, r, ps, verb, paused)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		id := r.PathValue("id")
		if err := a.schedules.SetPause(ctx, by, id, reason, paused); err != nil {
			a.scheduleError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "paused": paused})
	}
}

// scheduleError answers err of a schedule's read or write.
func (a *api) scheduleError(w http.ResponseWriter, err error) {
	var inv InvalidSchedule
	switch {
	case errors.As(err, &inv):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": inv.Error(), "code": codeInvalidSchedule, "fields": inv})
	case errors.Is(err, slotstore.ErrNoSchedule):
		httpError(w, http.StatusNotFound, codeNoSchedule, err.Error())
	case errors.Is(err, slotstore.ErrVersionMismatch):
		httpError(w, http.StatusConflict, codeVersionMismatch, err.Error())
	case errors.Is(err, slotstore.ErrNotSchedule):
		httpError(w, http.StatusConflict, codeNotSchedule, err.Error())
	case errors.Is(err, slotstore.ErrInvalid):
		httpError(w, http.StatusBadRequest, codeBadRequest, err.Error())
	default:
		a.e.StoreCall(err)
		httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
	}
}

// writer names who writes through the API: the name of the caller's token
// and the caller's address.
func writer(r *http.Request) string {
	if c := callerOf(r); c.name != "" {
		return c.name + " (http " + r.RemoteAddr + ")"
	}
	return "http " + r.RemoteAddr
}

// ifMatch returns the version a write must find: If-Match's ("3" or 3),
// else body's; both given must agree.
func ifMatch(r *http.Request, body int64) (int64, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return body, nil
	}
	v, err := strconv.ParseInt(strings.Trim(h, `"`), 10, 64)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("If-Match %q: a version, such as \"3\"", h)
	}
	if body != 0 && body != v {
		return 0, fmt.Errorf("If-Match %d and version %d in the body differ", v, body)
	}
	return v, nil
}

// decodeBody reads the request's JSON object body into v, refusing
// unknown fields, trailing data and bodies over maxBody.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("body: longer than %d bytes", maxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if dec.More() {
		return errors.New("body: more than one JSON value")
	}
	return nil
}
