package admin

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Paging of GET /api/jobs, and how many jobs' histories one request reads
// at once (all requests together read at most maxReads at once).
const (
	jobsLimit    = 100
	jobsMaxLimit = 1000
	readers      = 8
	// readTimeout bounds the store reads of one request.
	readTimeout = 10 * time.Second
)

// jobView is a job as GET /api/jobs shows it: its settings, its pauses and
// its status.
type jobView struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	// Next is the next slot in UTC and NextLocal the same instant in the
	// job's time zone; both empty while the job or the cluster is paused.
	Next      string `json:"next,omitempty"`
	NextLocal string `json:"next_local,omitempty"`
	Overlap   string `json:"overlap"`
	Lease     string `json:"lease"`
	Timeout   string `json:"timeout"`
	// The job's other settings, named as in the configuration file.
	OnCrash          string      `json:"on_crash"`
	AfterDataLoss    string      `json:"after_data_loss"`
	MaxAttempts      int         `json:"max_attempts"`
	StartingDeadline string      `json:"starting_deadline"`
	CatchUp          string      `json:"catch_up"`
	CatchUpLimit     int         `json:"catch_up_limit"`
	Jitter           string      `json:"jitter"`
	History          string      `json:"history"`
	Retries          retriesView `json:"retries"`
	// Paused is true while the job or the cluster is paused; Pause is the
	// job's own pause and ClusterPause the cluster's, each with its note.
	Paused       bool       `json:"paused"`
	Pause        *pauseNote `json:"pause,omitempty"`
	ClusterPause *pauseNote `json:"cluster_pause,omitempty"`
	// Catalog is the job's spec in force and whether this replica's
	// differs.
	Catalog jobCatalog `json:"catalog"`
	jobBounds
	jobStatus
}

// retriesView is a job's retry policy; Max 0 means no retries.
type retriesView struct {
	Max        int    `json:"max"`
	Backoff    string `json:"backoff"`
	MaxBackoff string `json:"max_backoff"`
}

// pauseNote is a pause in force: who set it, when and why.
type pauseNote struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	At     string `json:"at,omitempty"`
}

// noteOf returns the note of the pause of key ("" for the cluster's), or
// nil when it is not paused.
func noteOf(ps slotstore.Pauses, key string) *pauseNote {
	if key == "" && !ps.All || key != "" && !slices.Contains(ps.Jobs, key) {
		return nil
	}
	n := ps.Notes[key]
	out := &pauseNote{By: n.By, Reason: n.Reason}
	if !n.At.IsZero() {
		out.At = n.At.UTC().Format(time.RFC3339)
	}
	return out
}

// jobs answers GET /api/jobs: a page of the jobs whose name contains q
// (case-insensitive), in configuration order, as a JSON array; the header
// X-Total-Count says how many match, and Link the next and previous pages.
func (a *api) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := intParam(q, "limit", jobsLimit, 1, jobsMaxLimit)
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	offset, err := intParam(q, "offset", 0, 0, 1<<31)
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	st, ok := a.store(w)
	if !ok {
		return
	}
	filter := strings.ToLower(q.Get("q"))
	all := slices.DeleteFunc(a.e.Jobs(), func(j engine.JobSpec) bool { return !strings.Contains(strings.ToLower(j.Name), filter) })
	page := all[min(offset, len(all)):min(offset+limit, len(all))]
	views, err := a.jobViews(r.Context(), st, page, "")
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
		return
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(all)))
	var links []string
	link := func(offset int, rel string) {
		v := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset)}}
		if filter != "" {
			v.Set("q", q.Get("q"))
		}
		links = append(links, fmt.Sprintf(`</api/jobs?%s>; rel="%s"`, v.Encode(), rel))
	}
	if offset+limit < len(all) {
		link(offset+limit, "next")
	}
	if offset > 0 {
		link(max(0, offset-limit), "prev")
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	writeJSON(w, http.StatusOK, views)
}

// job answers GET /api/jobs/{job}: the job as GET /api/jobs shows it.
func (a *api) job(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("job")
	j, found := a.e.Job(name)
	if !found {
		httpError(w, http.StatusNotFound, codeNoJob, fmt.Sprintf("no such job %q", name))
		return
	}
	st, ok := a.store(w)
	if !ok {
		return
	}
	views, err := a.jobViews(r.Context(), st, []engine.JobSpec{j}, name)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, codeStore, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, views[0])
}

// jobViews describes js with their pauses, catalog entries and status,
// read from st: the catalog (and the replicas) in one read each, the
// running slots in one read (of only that job when one is given, and of
// each job when more run than one read takes), each job's history with at
// most readers reads at a time, all within readTimeout.
func (a *api) jobViews(ctx context.Context, st *boundedStore, js []engine.JobSpec, one string) ([]jobView, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	ps, err := st.Pauses(ctx)
	a.storeCall(ctx, err)
	if err != nil {
		return nil, fmt.Errorf("read pauses: %w", err)
	}
	names := make([]string, len(js))
	for i, j := range js {
		names[i] = j.Name
	}
	entries, live, err := readCatalogs(ctx, st, names)
	if err != nil {
		a.storeCall(ctx, err)
		return nil, fmt.Errorf("read the catalog: %w", err)
	}
	running, _, more, err := readRunning(ctx, st, one)
	if err != nil {
		a.storeCall(ctx, err)
		return nil, err
	}
	now := a.e.Now()
	out := make([]jobView, len(js))
	errs := make([]error, len(js))
	sem := make(chan struct{}, readers)
	var wg sync.WaitGroup
	for i, j := range js {
		out[i] = settingsOf(j, ps, now)
		v := &out[i]
		v.Catalog = a.catalogOf(st.r, j.Name, entries[j.Name], live)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			run := running[j.Name]
			if more {
				// The one read stopped at runningLimit: ask for this job's.
				var byJob map[string][]slotstore.Marker
				if byJob, _, _, errs[i] = readRunning(ctx, st, j.Name); errs[i] != nil {
					return
				}
				run = byJob[j.Name]
			}
			v.jobStatus, errs[i] = readStatus(ctx, st, j, run, now)
			if v.Paused {
				v.Health = healthPaused
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			a.storeCall(ctx, err)
			return nil, err
		}
	}
	return out, nil
}

// settingsOf describes j's settings, pauses (of ps) and next slot at now.
func settingsOf(j engine.JobSpec, ps slotstore.Pauses, now time.Time) jobView {
	v := jobView{Name: j.Name, Schedule: j.Schedule.String(), Timezone: j.Schedule.Location().String(),
		Overlap: string(j.Overlap), Lease: j.Lease.String(), Timeout: j.Timeout.String(),
		OnCrash: string(cmp.Or(j.OnCrash, policy.OnCrashRetry)), MaxAttempts: j.MaxAttempts, StartingDeadline: j.Deadline.String(),
		AfterDataLoss: string(cmp.Or(j.AfterDataLoss, policy.AfterDataLossSkip)),
		CatchUp:       string(j.CatchUp), CatchUpLimit: j.CatchUpLimit, Jitter: j.Jitter.String(), History: j.History.String(),
		Retries: retriesView{Max: j.Retries.Max, Backoff: j.Retries.Backoff.String(), MaxBackoff: j.Retries.MaxBackoff.String()},
		Pause:   noteOf(ps, j.Name), ClusterPause: noteOf(ps, "")}
	v.Paused = v.Pause != nil || v.ClusterPause != nil
	next := j.Schedule.Next(now)
	if !v.Paused && !next.IsZero() {
		v.Next = next.UTC().Format(time.RFC3339)
		v.NextLocal = next.In(j.Schedule.Location()).Format(time.RFC3339)
	}
	v.jobBounds = boundsOf(j, next, !v.Paused)
	return v
}

// intParam reads an optional integer query parameter from lo to hi.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q: want %d to %d", name, v, lo, hi)
	}
	return n, nil
}
