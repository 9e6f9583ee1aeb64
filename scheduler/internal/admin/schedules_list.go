package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// scheduleRow is a schedule as GET /api/schedules lists it: the schedule,
// its health and its newest slot.
type scheduleRow struct {
	ScheduleJSON
	// Health is paused, running, ok (its newest slot succeeded, or was
	// skipped by a policy), failing (failed, timed out, abandoned or
	// waiting for a retry), missed, or never (no slot recorded yet).
	Health string      `json:"health"`
	Last   *MarkerView `json:"last,omitempty"`
}

// healths are the values of health, and of the list's health filter.
var healths = []string{"ok", "failing", "missed", "running", "paused", "never"}

// scanBound bounds the schedules a filtered list reads for one answer: a
// filter that matches few stops there and says where to go on.
const scanBound = 1000

// listSchedules answers GET /api/schedules?job=&prefix=&after=&limit=&health=:
// {"schedules": [...], "next": the after of the next page ("" at the end),
// "scanned": how many schedules were read}. Each schedule's health comes
// from its newest marker, read with the other reads of the API. With
// health, schedules are read a page at a time until limit match or
// scanBound were read.
func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := ScheduleQuery{Job: q.Get("job"), Prefix: q.Get("prefix"), After: q.Get("after"), Limit: 100}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("limit %q: a number from 1 to 1000", l))
			return
		}
		p.Limit = n
	}
	health := q.Get("health")
	if health != "" && !slices.Contains(healths, health) {
		httpError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("health %q: one of %s", health, strings.Join(healths, ", ")))
		return
	}
	st, ok := a.store(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	out, next, scanned, err := a.scanSchedules(ctx, st, p, health)
	if err != nil {
		a.scheduleError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": out, "next": next, "scanned": scanned})
}

// scanSchedules reads pages of schedules from p.After until p.Limit of
// them have health (any when empty), the schedules end, or scanBound were
// read; next is the ID to go on after, "" at the end.
func (a *api) scanSchedules(ctx context.Context, st *boundedStore, p ScheduleQuery, health string) (out []scheduleRow, next string, scanned int, err error) {
	out = []scheduleRow{}
	for {
		page, err := a.schedules.List(ctx, p)
		if err != nil {
			return nil, "", scanned, err
		}
		rows, err := a.scheduleRows(ctx, st, page)
		if err != nil {
			return nil, "", scanned, err
		}
		for i, row := range rows {
			scanned++
			if health == "" || row.Health == health {
				out = append(out, row)
			}
			if len(out) == p.Limit {
				if i == len(rows)-1 && len(page) < p.Limit {
					return out, "", scanned, nil // the last schedule
				}
				return out, row.ID, scanned, nil
			}
		}
		if len(page) < p.Limit {
			return out, "", scanned, nil
		}
		if p.After = page[len(page)-1].ID; scanned >= scanBound {
			return out, p.After, scanned, nil
		}
	}
}

// scheduleRows reads the newest marker of each schedule of page, at most
// readers at a time, and the pauses, and makes each its row.
func (a *api) scheduleRows(ctx context.Context, st *boundedStore, page []ScheduleJSON) ([]scheduleRow, error) {
	ps, err := st.Pauses(ctx)
	a.storeCall(ctx, err)
	if err != nil {
		return nil, fmt.Errorf("read pauses: %w", err)
	}
	paused := make(map[string]bool, len(ps.Jobs))
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	now := a.e.Now()
	rows := make([]scheduleRow, len(page))
	errs := make([]error, len(page))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readers)
	for i, s := range page {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// Two: the newest may be claimed ahead of its slot, not begun.
			ms, err := st.History(ctx, slotstore.HistoryParams{Job: s.ID, Limit: 2})
			a.storeCall(ctx, err)
			errs[i] = err
			rows[i] = scheduleRow{ScheduleJSON: s}
			rows[i].Health, rows[i].Last = healthOf(ps.All || paused[s.ID], ms, now)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
	}
	return rows, nil
}

// healthOf is a schedule's health from its newest markers (newest first)
// at now: a slot claimed ahead of its instant, whose run has not begun,
// says nothing of it yet.
func healthOf(paused bool, ms []slotstore.Marker, now time.Time) (string, *MarkerView) {
	if len(ms) > 0 && ms[0].State == slotstore.StateRunning && ms[0].Slot.After(now) {
		ms = ms[1:]
	}
	if len(ms) == 0 {
		if paused {
			return "paused", nil
		}
		return "never", nil
	}
	m := ms[0]
	v := MarkerJSON(m)
	switch {
	case paused:
		return "paused", &v
	case m.State == slotstore.StateRunning || m.State == slotstore.StateReleased:
		return "running", &v
	case m.State == slotstore.StateDone && m.Outcome == slotstore.Succeeded, m.State == slotstore.StateReplaced:
		return "ok", &v
	case m.State == slotstore.StateSkipped && !strings.HasPrefix(m.Reason, "missed") && m.Reason != slotstore.ReasonDataLoss:
		return "ok", &v
	case m.State == slotstore.StateSkipped:
		return "missed", &v
	}
	return "failing", &v
}
