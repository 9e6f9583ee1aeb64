package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// maxNote is the longest by or reason the store keeps.
const maxNote = 1000

// pausesView is what is paused, as pause and resume answer it. WasPaused
// says whether what was asked for (the job, or the cluster) was paused
// before: a resume of something not paused changes nothing.
type pausesView struct {
	All       bool     `json:"all"`
	Jobs      []string `json:"jobs"`
	WasPaused bool     `json:"was_paused"`
}

// pause answers POST /api/pause and POST /api/resume. Parameters (query or
// JSON body): job (none: the whole cluster, which needs the admin role),
// reason (required), by (who; default the token's name and the caller's
// address).
func (a *api) pause(paused bool) http.HandlerFunc {
	verb := map[bool]string{true: "pause", false: "resume"}[paused]
	return func(w http.ResponseWriter, r *http.Request) {
		ps, err := postParams(r, field{name: "job"}, field{name: "reason"}, field{name: "by"})
		if err != nil {
			httpError(w, http.StatusBadRequest, codeBadRequest, verb+": "+err.Error())
			return
		}
		job := ps["job"]
		if _, given := ps["job"]; given && job == "" {
			// An empty job is not the cluster: pausing everything takes
			// leaving the job out, not a form field left blank.
			httpError(w, http.StatusBadRequest, codeBadRequest, verb+": job is empty; leave it out to "+verb+" the whole cluster")
			return
		}
		if job == "" && !a.g.allowed(w, r, RoleAdmin, verb+" of the whole cluster") {
			return
		}
		reason, by, ok := readPauseNote(w, r, ps, verb, true)
		if !ok {
			return
		}
		if job != "" && !a.hasJob(job) {
			httpError(w, http.StatusNotFound, codeNoJob, fmt.Sprintf("no such job %q", job))
			return
		}
		st, ok := a.store(w)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		before, err := st.Pauses(ctx)
		a.storeCall(ctx, err)
		if err != nil {
			httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
			return
		}
		err = st.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: paused, By: by, Reason: reason})
		a.storeCall(ctx, err)
		a.record(r, engine.Act{Kind: verb, Target: job, Reason: reason, Err: err})
		if errors.Is(err, slotstore.ErrInvalid) {
			httpError(w, http.StatusBadRequest, codeBadRequest, verb+": "+err.Error())
			return
		}
		if err != nil {
			httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
			return
		}
		now, err := st.Pauses(ctx)
		a.storeCall(ctx, err)
		if err != nil {
			httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
			return
		}
		was := before.All // the job, or the cluster, paused in its own right
		if job != "" {
			was = slices.Contains(before.Jobs, job)
		}
		a.e.Log().Info("pauses changed", "job", job, "paused", paused, "by", by, "reason", reason, "was_paused", was, "remote", r.RemoteAddr)
		writeJSON(w, http.StatusOK, pausesView{All: now.All, Jobs: now.Jobs, WasPaused: was})
	}
}

// readPauseNote reads the reason and by of a pause or resume from ps, or
// answers 400 and reports false: a reason is required when needReason,
// each is at most maxNote bytes, and by defaults to the caller (writer).
func readPauseNote(w http.ResponseWriter, r *http.Request, ps map[string]string, verb string, needReason bool) (reason, by string, ok bool) {
	reason, by = strings.TrimSpace(ps["reason"]), strings.TrimSpace(ps["by"])
	switch {
	case needReason && reason == "":
		httpError(w, http.StatusBadRequest, codeBadRequest, verb+": reason is required: say why, for whoever looks next")
		return "", "", false
	case len(reason) > maxNote:
		httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("%s: reason is longer than %d bytes", verb, maxNote))
		return "", "", false
	case len(by) > maxNote:
		httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("%s: by is longer than %d bytes", verb, maxNote))
		return "", "", false
	}
	if by == "" {
		by = writer(r)
	}
	return reason, by, true
}
