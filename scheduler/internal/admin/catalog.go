package admin

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Paging of GET /api/catalog, and the most carriers the store keeps of a
// spec (slotstore.CatalogEntry.Carriers): with that many, a replica not
// among them may carry the spec all the same.
const (
	catalogLimit    = 100
	catalogMaxLimit = 1000
	maxCarriers     = 32
)

// Where a job stands in the catalog, for this replica (jobCatalog.Status).
const (
	catalogInForce     = "in_force"     // this replica's spec is the spec in force
	catalogConflict    = "conflict"     // another spec is in force: this replica claims none of its slots
	catalogNotEnrolled = "not_enrolled" // no spec in force yet
)

// specView is a spec as the catalog keeps it: its record, and its body's
// fields (schedule, zone, lease...) when this build can read them.
type specView struct {
	Fingerprint string `json:"fingerprint"`
	Revision    int64  `json:"revision"`
	// Replica is the replica whose enrolment put the spec in force, Since
	// when (the store's clock), Until when another replaced it.
	Replica string `json:"replica,omitempty"`
	Since   string `json:"since,omitempty"`
	Until   string `json:"until,omitempty"`
	// Readable is false for a body a newer build wrote: then only the
	// fields above describe it.
	Readable bool `json:"readable"`
	*engine.SpecBody
}

func specJSON(r slotstore.SpecRecord) specView {
	v := specView{Fingerprint: r.Fingerprint, Revision: r.Revision, Replica: r.Replica, Since: rfc3339(r.Since), Until: rfc3339(r.Until)}
	if b, ok := engine.ParseBody(r.Body); ok {
		v.Readable, v.SpecBody = true, &b
	}
	return v
}

// carrierView is a replica that enrolled the spec in force since it took
// force, with the store's time of its last enrolment.
type carrierView struct {
	Replica  string `json:"replica"`
	Enrolled string `json:"enrolled"`
}

func carriersJSON(cs map[string]time.Time) []carrierView {
	out := make([]carrierView, 0, len(cs))
	for r, t := range cs {
		out = append(out, carrierView{Replica: r, Enrolled: rfc3339(t)})
	}
	slices.SortFunc(out, func(x, y carrierView) int { return strings.Compare(x.Replica, y.Replica) })
	return out
}

// ownSpec is this replica's spec of a job, under its configuration's
// revision.
type ownSpec struct {
	Fingerprint string `json:"fingerprint"`
	Revision    int64  `json:"revision"`
}

// conflictView is this replica's spec of a job set against the spec in
// force: both fingerprints and the fields that differ, each as
// "field: own → in force".
type conflictView struct {
	Own     string   `json:"own"`
	InForce string   `json:"in_force"`
	Differs []string `json:"differs"`
}

// otherView is a replica that carries another spec of a job than the one
// in force. Spec is that spec's fingerprint when known (this replica's
// own); empty for a live replica that is not among the spec's carriers:
// it enrolled another spec, or its configuration has no such job.
type otherView struct {
	Replica string `json:"replica"`
	Spec    string `json:"spec,omitempty"`
}

// jobCatalog is a job's entry in the catalog as this replica sees it.
type jobCatalog struct {
	Status string  `json:"status"`
	Own    ownSpec `json:"own"`
	// InForce is the spec in force; null while the job is not enrolled.
	InForce *specView `json:"in_force"`
	// Conflict is set while this replica's spec is not the spec in force.
	Conflict *conflictView `json:"conflict"`
	Carriers []carrierView `json:"carriers"`
	// Others are the replicas carrying another spec; with maxCarriers
	// carriers the store may have dropped some, and none are listed.
	Others []otherView `json:"others"`
}

// catalogOf describes job's entry en (nil when the catalog has none) for
// this replica, whose own spec rec gives; live names the live replicas.
func (a *api) catalogOf(rec engine.Records, job string, en *slotstore.CatalogEntry, live []string) jobCatalog {
	own, _, _ := rec.SpecOf(job)
	c := jobCatalog{Status: catalogNotEnrolled, Own: ownSpec{Fingerprint: own.Fingerprint, Revision: own.Revision},
		Carriers: []carrierView{}, Others: []otherView{}}
	if en == nil || en.InForce.Fingerprint == "" {
		return c
	}
	f := specJSON(en.InForce)
	c.InForce, c.Status, c.Carriers = &f, catalogInForce, carriersJSON(en.Carriers)
	if own.Fingerprint != "" && own.Fingerprint != f.Fingerprint {
		c.Status = catalogConflict
		c.Conflict = &conflictView{Own: own.Fingerprint, InForce: f.Fingerprint, Differs: differences(own.Body, en.InForce.Body)}
		c.Others = append(c.Others, otherView{Replica: a.e.Replica(), Spec: own.Fingerprint})
	}
	if len(en.Carriers) >= maxCarriers {
		return c
	}
	for _, r := range live {
		if _, carries := en.Carriers[r]; !carries && r != a.e.Replica() {
			c.Others = append(c.Others, otherView{Replica: r})
		}
	}
	return c
}

// differences lists the fields in which this replica's spec body own
// differs from inForce, as engine.Differences does.
func differences(own, inForce []byte) []string {
	a, okA := engine.ParseBody(own)
	b, okB := engine.ParseBody(inForce)
	if !okA || !okB {
		return []string{"(the spec in force was written by a build this one cannot read)"}
	}
	if d := engine.Differences(a, b); len(d) > 0 {
		return d
	}
	return []string{"(nothing this build reads: another build's fields)"}
}

// readCatalogs reads the catalog entries of names and the live replicas,
// for catalogOf.
func readCatalogs(ctx context.Context, st reader, names []string) (map[string]*slotstore.CatalogEntry, []string, error) {
	byJob := make(map[string]*slotstore.CatalogEntry, len(names))
	if len(names) == 0 {
		return byJob, nil, nil // no Jobs would read every job's
	}
	es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: names, Limit: len(names)})
	if err != nil {
		return nil, nil, err
	}
	for i := range es {
		byJob[es[i].Job] = &es[i]
	}
	reps, err := st.Replicas(ctx)
	if err != nil {
		return nil, nil, err
	}
	var live []string
	for _, r := range reps {
		if r.Live {
			live = append(live, r.Replica)
		}
	}
	return byJob, live, nil
}

// catalogPage is a page of the catalog as GET /api/catalog shows it.
type catalogPage struct {
	// Replica is the replica that answered; Revision its configuration's
	// revision (0 for none).
	Replica  string             `json:"replica"`
	Revision int64              `json:"revision"`
	Jobs     []catalogEntryView `json:"jobs"`
	// NextAfter, when set, is the after of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// catalogEntryView is one job of the catalog.
type catalogEntryView struct {
	Job      string        `json:"job"`
	InForce  specView      `json:"in_force"`
	Carriers []carrierView `json:"carriers"`
	// Past are the specs in force before, newest first.
	Past []specView `json:"past"`
	// Own is this replica's spec of the job; null when its configuration
	// has no such job. Conflict says it is not the spec in force.
	Own      *ownSpec `json:"own"`
	Conflict bool     `json:"conflict"`
}

// catalog answers GET /api/catalog?after=&limit=: the catalog's entries,
// sorted by job, a page at a time.
func (a *api) catalog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := intParam(q, "limit", catalogLimit, 1, catalogMaxLimit)
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	var rec engine.Records
	es, ok := readStore(a, w, r, "read the catalog: ", func(ctx context.Context, st *boundedStore) ([]slotstore.CatalogEntry, error) {
		rec = st.r
		return st.Catalog(ctx, slotstore.CatalogParams{After: q.Get("after"), Limit: limit})
	})
	if !ok {
		return
	}
	out := catalogPage{Replica: a.e.Replica(), Revision: rec.Revision(), Jobs: make([]catalogEntryView, len(es))}
	for i, en := range es {
		v := catalogEntryView{Job: en.Job, InForce: specJSON(en.InForce), Carriers: carriersJSON(en.Carriers), Past: make([]specView, len(en.Past))}
		for j, p := range en.Past {
			v.Past[j] = specJSON(p)
		}
		if own, _, ok := rec.SpecOf(en.Job); ok {
			v.Own = &ownSpec{Fingerprint: own.Fingerprint, Revision: own.Revision}
			v.Conflict = en.InForce.Fingerprint != "" && own.Fingerprint != en.InForce.Fingerprint
		}
		out.Jobs[i] = v
	}
	if len(es) == limit {
		out.NextAfter = es[len(es)-1].Job
	}
	writeJSON(w, http.StatusOK, out)
}
