package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// Paging of a job's history.
const (
	historyLimit    = 50
	historyMaxLimit = 1000
	// scanBudget bounds the markers one filtered page reads: a filter the
	// store cannot apply (outcome, attempt, manual) is applied while
	// paging, and a page that would need more stops early and says so.
	scanBudget = 10000
	// scanPage is how many markers each read of a filtered scan asks for.
	scanPage = 500
)

// history answers GET /api/history: the newest markers of every job or of
// one, as a JSON array.
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
	state, err := stateParam(q.Get("state"))
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	ms, ok := readStore(a, w, r, "read history: ", func(ctx context.Context, st *boundedStore) ([]slotstore.Marker, error) {
		return st.History(ctx, slotstore.HistoryParams{Job: q.Get("job"), State: state, Limit: limit})
	})
	if !ok {
		return
	}
	out := make([]MarkerView, len(ms))
	for i, m := range ms {
		out[i] = MarkerJSON(m)
	}
	writeJSON(w, http.StatusOK, out)
}

// slotView is a marker as a job's history shows it.
type slotView struct {
	MarkerView
	// LeaseEnd is when the lease of a running slot ends, or when a
	// retrying slot's retry is due.
	LeaseEnd string `json:"lease_end,omitempty"`
}

// historyPage is one page of a job's history.
type historyPage struct {
	Job   string     `json:"job"`
	Slots []slotView `json:"slots"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore string `json:"next_before,omitempty"`
	// Scanned is how many markers were read for the page; ScanStopped
	// says the scan reached its bound before the page was full, and
	// NextBefore continues it.
	Scanned     int  `json:"scanned"`
	ScanStopped bool `json:"scan_stopped,omitempty"`
}

// historyFilter selects the markers of a job's history page.
type historyFilter struct {
	state   slotstore.State
	outcome slotstore.Outcome
	// attemptGT selects attempts above it; -1 selects every marker, those
	// with attempt 0 (skipped slots) too.
	attemptGT int
	manual    *bool
}

// scans reports whether the filter has parts the store cannot apply.
func (f historyFilter) scans() bool {
	return f.outcome != "" || f.attemptGT >= 0 || f.manual != nil
}

func (f historyFilter) match(m slotstore.Marker) bool {
	return (f.outcome == "" || m.Outcome == f.outcome) && m.Attempt > f.attemptGT && (f.manual == nil || m.Manual == *f.manual)
}

// jobHistory answers GET /api/jobs/{job}/history?before=&limit=&state=
// &outcome=&attempt_gt=&manual=: the job's markers, newest slot first.
func (a *api) jobHistory(w http.ResponseWriter, r *http.Request) {
	job, ok := a.pathJob(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	bad := func(err error) { httpError(w, http.StatusBadRequest, codeBadRequest, err.Error()) }
	limit, err := intParam(q, "limit", historyLimit, 1, historyMaxLimit)
	if err != nil {
		bad(err)
		return
	}
	var f historyFilter
	if f.state, err = stateParam(q.Get("state")); err != nil {
		bad(err)
		return
	}
	if v := q.Get("outcome"); v != "" {
		if f.outcome = slotstore.Outcome(v); !f.outcome.Valid() {
			bad(fmt.Errorf("outcome %q: want %s, %s or %s", v, slotstore.Succeeded, slotstore.Failed, slotstore.TimedOut))
			return
		}
	}
	if f.attemptGT, err = intParam(q, "attempt_gt", -1, 0, 1<<30); err != nil {
		bad(err)
		return
	}
	if v := q.Get("manual"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(fmt.Errorf("manual %q: want true or false", v))
			return
		}
		f.manual = &b
	}
	var before time.Time
	if v := q.Get("before"); v != "" {
		if before, err = time.Parse(time.RFC3339, v); err != nil {
			bad(fmt.Errorf("before %q: want an RFC 3339 time such as 2026-11-29T02:00:00Z", v))
			return
		}
	}
	page, ok := readStore(a, w, r, "", func(ctx context.Context, st *boundedStore) (historyPage, error) {
		return readHistory(ctx, st, job, f, before, limit)
	})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// readHistory reads one page of job's history: up to limit markers of
// slots before before (zero: the newest) that f selects, reading at most
// scanBudget markers when f has parts the store cannot apply.
func readHistory(ctx context.Context, st reader, job string, f historyFilter, before time.Time, limit int) (historyPage, error) {
	out := historyPage{Job: job, Slots: []slotView{}}
	for {
		// One more than the page holds: it tells whether there is an
		// older page.
		n := limit - len(out.Slots) + 1
		if f.scans() {
			n = min(scanPage, scanBudget-out.Scanned)
		}
		ms, err := st.History(ctx, slotstore.HistoryParams{Job: job, State: f.state, Before: before, Limit: n})
		if err != nil {
			return out, fmt.Errorf("read the history of %s: %w", job, err)
		}
		for _, m := range ms {
			if len(out.Slots) == limit {
				out.NextBefore = out.Slots[limit-1].Slot
				return out, nil
			}
			out.Scanned++
			if f.match(m) {
				out.Slots = append(out.Slots, slotJSON(m))
			}
		}
		if len(ms) < n { // nothing older
			return out, nil
		}
		// One marker a slot, for one job: the next read starts just
		// before the oldest slot read.
		before = ms[len(ms)-1].Slot
		if len(out.Slots) == limit {
			out.NextBefore = before.UTC().Format(time.RFC3339)
			return out, nil
		}
		if out.Scanned >= scanBudget {
			out.ScanStopped = true
			out.NextBefore = before.UTC().Format(time.RFC3339)
			return out, nil
		}
	}
}

func slotJSON(m slotstore.Marker) slotView {
	v := slotView{MarkerView: MarkerJSON(m)}
	if m.State == slotstore.StateRunning || m.State == slotstore.StateRetrying {
		v.LeaseEnd = m.LeaseEnd.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// stateParam reads a state filter; empty is every state.
func stateParam(v string) (slotstore.State, error) {
	s := slotstore.State(v)
	if s != "" && !slices.Contains(states, s) {
		return "", fmt.Errorf("state %q: want one of %s", v, statesText)
	}
	return s, nil
}
