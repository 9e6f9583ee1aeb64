package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"

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
