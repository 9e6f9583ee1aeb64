package admin

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// clusterTimeout bounds the store reads of GET /api/cluster.
const clusterTimeout = 5 * time.Second

// clusterView is the cluster as GET /api/cluster shows it. A part the store
// could not give is left out and its error listed in Errors; the answer is
// still 200, so the page can say what is wrong.
type clusterView struct {
	// Replica is the replica that answered, with its build and start.
	Replica string `json:"replica"`
	// Revision is its configuration's revision, 0 for none.
	Revision int64     `json:"revision"`
	Version  string    `json:"version"`
	Started  string    `json:"started"`
	Now      string    `json:"now"`
	Store    storeView `json:"store"`
	// Paused is true while the whole cluster is paused, Pause its note;
	// PausedJobs lists the jobs paused on their own.
	Paused     bool       `json:"paused"`
	Pause      *pauseNote `json:"pause,omitempty"`
	PausedJobs []string   `json:"paused_jobs"`
	// Replicas are those that beat within the last hour, live or not, and
	// those holding running slots, by name; this replica is always among
	// them.
	Replicas []replicaView `json:"replicas"`
	// Duties are this replica's duties and any other a live replica leads.
	Duties []dutyView `json:"duties"`
	// Running counts the slots of the configured jobs running now;
	// RunningMore says there may be more than were read.
	Running     int      `json:"running"`
	RunningMore bool     `json:"running_more,omitempty"`
	Errors      []string `json:"errors,omitempty"`
}

// storeView is the store and how its health check, a read of the
// pauses, went: OK, and the call's latency.
type storeView struct {
	Kind    string  `json:"kind"`
	OK      bool    `json:"ok"`
	Latency float64 `json:"latency_ms"`
	Error   string  `json:"error,omitempty"`
}

// replicaView is a replica as its last beat describes it.
type replicaView struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Started string `json:"started,omitempty"`
	// Seen is when the store recorded its last beat, empty for this
	// replica before its first; Live says that beat still stands.
	Seen string `json:"seen,omitempty"`
	Live bool   `json:"live"`
	This bool   `json:"this,omitempty"`
	// Running counts the running slots it holds.
	Running int            `json:"running"`
	Duties  []dutyTermView `json:"duties"`
	// Revision is the revision of the configuration it runs, as its last
	// beat says (this replica's own, now): 0 for none, or for a build
	// whose beats do not say.
	Revision int64 `json:"revision"`
}

// dutyTermView is a term of a duty a replica leads.
type dutyTermView struct {
	Name  string `json:"name"`
	Fence int64  `json:"fence"`
	Since string `json:"since,omitempty"`
}

// dutyView is a duty: who leads it by the live beats, and this replica's
// own view of it.
type dutyView struct {
	Name   string `json:"name"`
	Leader string `json:"leader,omitempty"`
	Fence  int64  `json:"fence,omitempty"`
	Since  string `json:"since,omitempty"`
	// Here is this replica's view; nil for a duty it does not run.
	Here *localDutyView `json:"here,omitempty"`
}

// localDutyView is a duty as this replica sees it.
type localDutyView struct {
	Lease   string `json:"lease"`
	Leading bool   `json:"leading"`
	Fence   int64  `json:"fence,omitempty"`
	Since   string `json:"since,omitempty"`
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// cluster answers GET /api/cluster.
func (a *api) cluster(w http.ResponseWriter, r *http.Request) {
	st, ok := a.store(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
	defer cancel()
	var (
		wg                    sync.WaitGroup
		ps                    slotstore.Pauses
		reps                  []slotstore.Replica
		running               []slotstore.Marker
		runMore               bool
		psErr, repErr, runErr error
		latency               time.Duration
	)
	// The read of the pauses, one small read on every store, is the
	// store's health: its latency is the call's own, not its wait for a
	// place among the shared reads.
	wg.Go(func() {
		psErr = a.read(ctx, func() error {
			t0 := time.Now()
			var err error
			ps, err = st.r.Pauses(ctx)
			latency = time.Since(t0)
			return err
		})
	})
	wg.Go(func() { reps, repErr = st.Replicas(ctx) })
	wg.Go(func() { _, running, runMore, runErr = readRunning(ctx, st, "") })
	wg.Wait()
	a.storeCall(ctx, psErr)

	b := a.e.Build()
	v := clusterView{Replica: a.e.Replica(), Revision: st.r.Revision(), Version: b.Version, Started: rfc3339(a.e.Started()), Now: rfc3339(a.e.Now()),
		Store:      storeView{Kind: a.kind(st.r), OK: psErr == nil, Latency: float64(latency.Microseconds()) / 1000},
		PausedJobs: []string{}, RunningMore: runMore}
	fail := func(what string, err error) { v.Errors = append(v.Errors, what+": "+err.Error()) }
	if psErr != nil {
		v.Store.Error = psErr.Error()
		fail("store (reading the pauses)", psErr)
	} else {
		v.Paused, v.Pause, v.PausedJobs = ps.All, noteOf(ps, ""), ps.Jobs
	}
	if repErr != nil {
		fail("replicas", repErr)
	}
	if runErr != nil {
		fail("running slots", runErr)
	}
	held := make(map[string]int)
	for _, m := range running {
		// Slots of the configured jobs only: a store may keep other
		// leases as running markers (a duty's term, on a store without an
		// elector of its own).
		if a.hasJob(m.Job) {
			held[m.Holder]++
			v.Running++
		}
	}
	v.Replicas = a.replicas(reps, held)
	for i := range v.Replicas {
		if v.Replicas[i].This {
			v.Replicas[i].Revision = v.Revision
		}
	}
	v.Duties = a.duties(reps)
	writeJSON(w, http.StatusOK, v)
}

// replicas describes the replicas of reps, this one from its own view if
// the store has no beat of it yet, and any other holding running slots,
// by name.
func (a *api) replicas(reps []slotstore.Replica, held map[string]int) []replicaView {
	// This replica's duties as it sees them now, fresher than its beat.
	mine := []dutyTermView{}
	for _, d := range a.e.Duties() {
		if d.Leading {
			mine = append(mine, dutyTermView{Name: d.Name, Fence: d.Fence, Since: rfc3339(d.Since)})
		}
	}
	out := make([]replicaView, 0, len(reps)+1)
	for _, r := range reps {
		v := replicaView{Name: r.Replica, Version: r.Version, Started: rfc3339(r.Started), Seen: rfc3339(r.Seen), Live: r.Live,
			This: r.Replica == a.e.Replica(), Running: held[r.Replica], Duties: []dutyTermView{}, Revision: r.Revision}
		for _, d := range r.Duties {
			v.Duties = append(v.Duties, dutyTermView{Name: d.Name, Fence: d.Fence, Since: rfc3339(d.Since)})
		}
		if v.This {
			v.Duties = mine
		}
		out = append(out, v)
	}
	if !slices.ContainsFunc(out, func(v replicaView) bool { return v.This }) {
		out = append(out, replicaView{Name: a.e.Replica(), Version: a.e.Build().Version, Started: rfc3339(a.e.Started()), Live: true,
			This: true, Running: held[a.e.Replica()], Duties: mine})
	}
	// A replica that holds running slots but sent no beat (one of an
	// older version, or one whose beats fail) is listed too, not live.
	for holder, n := range held {
		if !slices.ContainsFunc(out, func(v replicaView) bool { return v.Name == holder }) {
			out = append(out, replicaView{Name: holder, Running: n, Duties: []dutyTermView{}})
		}
	}
	slices.SortFunc(out, func(x, y replicaView) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// duties describes this replica's duties, in configuration order, then any
// other a live replica leads, by name. A duty's leader is the live replica
// whose beat names the highest fence for it (two may, for a moment, while
// a term passes), or this replica when it leads and its beat is not in yet.
func (a *api) duties(reps []slotstore.Replica) []dutyView {
	var out []dutyView
	at := make(map[string]int)
	for _, d := range a.e.Duties() {
		v := dutyView{Name: d.Name, Here: &localDutyView{Lease: d.Lease.String(), Leading: d.Leading, Fence: d.Fence, Since: rfc3339(d.Since)}}
		if d.Leading {
			v.Leader, v.Fence, v.Since = a.e.Replica(), d.Fence, rfc3339(d.Since)
		}
		at[d.Name] = len(out)
		out = append(out, v)
	}
	var others []string
	for _, r := range reps {
		if !r.Live {
			continue
		}
		for _, t := range r.Duties {
			i, ok := at[t.Name]
			if !ok {
				i, at[t.Name] = len(out), len(out)
				out = append(out, dutyView{Name: t.Name})
				others = append(others, t.Name)
			}
			if t.Fence > out[i].Fence {
				out[i].Leader, out[i].Fence, out[i].Since = r.Replica, t.Fence, rfc3339(t.Since)
			}
		}
	}
	own := len(out) - len(others)
	slices.SortFunc(out[own:], func(x, y dutyView) int { return strings.Compare(x.Name, y.Name) })
	if out == nil {
		out = []dutyView{}
	}
	return out
}

// kind names the store: as configured, or by its Go package.
func (a *api) kind(r engine.Records) string {
	if a.storeKind != "" {
		return a.storeKind
	}
	return r.Kind()
}
