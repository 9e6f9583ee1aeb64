package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// auditView is a job's audit as GET /api/jobs/{job}/audit shows it: every
// nominal slot of the window under the spec in force at its time, with
// its fate, oldest first.
type auditView struct {
	Job   string          `json:"job"`
	From  string          `json:"from"`
	To    string          `json:"to"`
	Slots []auditSlotView `json:"slots"`
	// Counts counts the slots by fate.
	Counts map[string]int `json:"counts"`
	// HistoryFrom is where the history kept ends: a slot older than it
	// with no marker may have run and had its marker pruned ("beyond
	// history"). Empty when the job keeps no history limit.
	HistoryFrom string `json:"history_from,omitempty"`
	// Truncated says the window held more than engine.MaxAuditSlots slots:
	// Slots and Counts cover the newest, from ListedFrom.
	Truncated  bool   `json:"truncated"`
	ListedFrom string `json:"listed_from"`
}

// auditSlotView is one slot of an audit: its fate — the marker's state
// (done, skipped, running...) or, with no marker, unaccounted, pending,
// beyond history or before record — and what its marker says.
type auditSlotView struct {
	Slot string `json:"slot"`
	// Spec is the fingerprint of the spec in force at the slot's time;
	// empty for a slot that is none of a spec's (a manual trigger's).
	Spec    string `json:"spec,omitempty"`
	Fate    string `json:"fate"`
	Outcome string `json:"outcome,omitempty"`
	// Attempts is the marker's attempt: how many claims the slot took.
	Attempts int    `json:"attempts,omitempty"`
	Holder   string `json:"holder,omitempty"`
	Fence    int64  `json:"fence,omitempty"`
	// Origin is "manual" or "backfill" for a slot run so; empty for a
	// scheduled one.
	Origin string `json:"origin,omitempty"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

func auditJSON(au engine.Audit) auditView {
	v := auditView{Job: au.Job, From: rfc3339(au.From), To: rfc3339(au.To), Slots: make([]auditSlotView, len(au.Slots)),
		Counts: au.Counts, HistoryFrom: rfc3339(au.HistoryFrom), Truncated: au.Truncated,
		ListedFrom: rfc3339(au.Listed)}
	for i, s := range au.Slots {
		x := auditSlotView{Slot: rfc3339(s.Slot), Spec: s.Spec, Fate: s.Fate}
		if m := s.Marker; m != nil {
			x.Outcome, x.Attempts, x.Holder, x.Fence, x.Reason, x.Error = string(m.Outcome), m.Attempt, m.Holder, m.Fence, m.Reason, m.Error
			switch {
			case m.Manual:
				x.Origin = "manual"
			case m.Backfill:
				x.Origin = "backfill"
			}
		}
		v.Slots[i] = x
	}
	return v
}

// jobAudit answers GET /api/jobs/{job}/audit?from=&to=: from is required,
// to defaults to now, both RFC 3339.
func (a *api) jobAudit(w http.ResponseWriter, r *http.Request) {
	job, ok := a.pathJob(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	from, to, code, err := auditRange(q.Get("from"), q.Get("to"), a.e.Now())
	if err != nil {
		httpError(w, http.StatusBadRequest, code, err.Error())
		return
	}
	au, ok := readStore(a, w, r, "", func(ctx context.Context, st *boundedStore) (engine.Audit, error) {
		au, err := st.Audit(ctx, job, from, to)
		switch {
		case errors.Is(err, engine.ErrNotInCatalog):
			return au, refusal{http.StatusNotFound, codeNotInCatalog, err}
		case errors.Is(err, engine.ErrBadWindow):
			return au, refusal{http.StatusBadRequest, codeBadRange, err}
		case errors.Is(err, engine.ErrSpecUnreadable):
			return au, refusal{http.StatusInternalServerError, codeSpecUnreadable, err}
		}
		return au, err
	})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, auditJSON(au))
}

// auditRange reads an audit's window: from required, to defaulting to
// now, and not before from. A bad one answers its error code with why.
func auditRange(fromText, toText string, now time.Time) (from, to time.Time, code string, err error) {
	parse := func(name, v string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-11-29T02:00:00Z", name, v)
		}
		return t, nil
	}
	if fromText == "" {
		return from, to, codeBadRequest, errors.New("from is required: an RFC 3339 time such as 2026-11-29T02:00:00Z")
	}
	if from, err = parse("from", fromText); err != nil {
		return from, to, codeBadRequest, err
	}
	to = now
	if toText != "" {
		if to, err = parse("to", toText); err != nil {
			return from, to, codeBadRequest, err
		}
	}
	if to.Before(from) {
		return from, to, codeBadRange, fmt.Errorf("to %s is before from %s", to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	return from, to, "", nil
}
