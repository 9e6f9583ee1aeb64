package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// Records is the store of a Run in progress as the admin API uses it: the
// reads its pages make and the pause switch, nothing more. The API never
// holds the store itself, so what the engine keeps about the store sees
// every change made through this replica: a pause or resume set here is
// obeyed at its next slot.
type Records struct {
	st slotstore.Store
	l  *loop
}

// Records returns the store of the Run in progress; false when none is.
// A Records may be used for as long as the Run it came from runs.
func (e *Engine) Records() (Records, bool) {
	l := e.live.cur.Load()
	if l == nil {
		return Records{}, false
	}
	return Records{st: l.st, l: l}, true
}

// History reads markers, as slotstore.Store.History.
func (r Records) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	return r.st.History(ctx, p)
}

// Pauses reads what is paused, as slotstore.Store.Pauses.
func (r Records) Pauses(ctx context.Context) (slotstore.Pauses, error) { return r.st.Pauses(ctx) }

// Replicas reads the replicas' beats, as slotstore.Store.Replicas.
func (r Records) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	return r.st.Replicas(ctx)
}

// SetPause pauses or resumes a job or the cluster, as
// slotstore.Store.SetPause, and makes this replica's next slot read the
// pauses anew, whether or not the store answered (a change whose reply was
// lost may have been made).
func (r Records) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	defer r.l.pauses.changed()
	return r.st.SetPause(ctx, p)
}

// Kind names the store by its Go package ("sqlitestore", "pgstore", …),
// for a replica whose configuration did not name it.
func (r Records) Kind() string {
	t := reflect.TypeOf(r.st)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p := t.PkgPath(); p != "" {
		return p[strings.LastIndex(p, "/")+1:]
	}
	return fmt.Sprintf("%T", r.st)
}

// Catalog reads catalog entries, as slotstore.Store.Catalog.
func (r Records) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	return r.st.Catalog(ctx, p)
}

// Audit audits job over [from, to] (AuditJob), at the engine's time now.
func (r Records) Audit(ctx context.Context, job string, from, to time.Time) (Audit, error) {
	return AuditJob(ctx, r.st, job, from, to, r.l.s.now())
}

// SpecOf returns this replica's spec of job and, while it is in conflict,
// the spec in force it conflicts with (its fingerprint "(being read)"
// until the catalog has been read); false when the configuration has no
// such job.
func (r Records) SpecOf(job string) (own slotstore.Spec, conflict *slotstore.SpecRecord, ok bool) {
	p := r.l.s.jobs().plan(job)
	if p == nil {
		return slotstore.Spec{}, nil, false
	}
	return p.spec, p.conflict.Load(), true
}

// Revision is the revision of the configuration in force, 0 for none.
func (r Records) Revision() int64 { return r.l.s.jobs().revision }
