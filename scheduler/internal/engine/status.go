package engine

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/slotstore"
)

// DutyStatus is a duty as this replica sees it.
type DutyStatus struct {
	Name  string
	Lease time.Duration
	// Leading is true while this replica holds a term of the duty, with
	// the term's fence and when this replica won it.
	Leading bool
	Fence   int64
	Since   time.Time
}

// Duties describes every duty, in configuration order.
func (e *Engine) Duties() []DutyStatus {
	out := make([]DutyStatus, len(e.duties))
	for i, d := range e.duties {
		out[i] = DutyStatus{Name: d.name, Lease: d.lease}
		if t := d.term.Load(); t != nil {
			out[i].Leading, out[i].Fence, out[i].Since = true, t.Fence, t.Since
		}
	}
	return out
}

// Build describes the binary the engine runs in.
func (e *Engine) Build() buildinfo.Info { return e.build }

// Started is when the engine was built, by its clock.
func (e *Engine) Started() time.Time { return e.started }

// The beats a replica sends while it runs: every beatEvery, each standing
// for beatTTL, so two lost in a row do not make a live replica look gone.
const (
	beatEvery = 5 * time.Second
	beatTTL   = 3 * beatEvery
)

// beat tells the store, every beatEvery until ctx ends, that this replica is
// alive, with its build and the duties it leads, and reads the pauses for
// the metrics that show them unless the loop read them since the last beat,
// and the revision of the configuration it runs (the last reload's). Beats
// are for the
// dashboard's cluster view only: a failed one is logged at debug level and
// counted in store_up, and changes nothing else.
func (e *Engine) beat(ctx context.Context, st slotstore.Store) {
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		b := slotstore.Beat{Replica: e.replica, Incarnation: e.incarnation, Version: e.build.Version,
			Started: e.started, TTL: beatTTL, Revision: e.jobs().revision}
		for _, d := range e.duties {
			if term := d.term.Load(); term != nil {
				b.Duties = append(b.Duties, *term)
			}
		}
		bctx, cancel := context.WithTimeout(ctx, beatEvery)
		err := st.Beat(bctx, b)
		if err == nil && e.metrics.pausesAge() >= beatEvery {
			// For slotcron_*_paused, fresh even while no slot is due; a
			// replica whose slots are due reads them anyway.
			if ps, perr := st.Pauses(bctx); perr == nil {
				e.metrics.notePauses(ps)
			}
		}
		cancel()
		if ctx.Err() == nil {
			e.metrics.storeCall(err)
		}
		if err != nil && ctx.Err() == nil {
			e.log.Debug("beat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beatGone replaces this replica's beat, once its runs have ended, with one
// that stands for a millisecond: the cluster view shows it gone at once, and
// replicas waiting for the carriers of a spec in force to be gone (a
// rollback) need not wait out its TTL. A failure changes nothing but that.
func (e *Engine) beatGone(st slotstore.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := st.Beat(ctx, slotstore.Beat{Replica: e.replica, Incarnation: e.incarnation, Version: e.build.Version,
		Started: e.started, TTL: time.Millisecond, Revision: e.jobs().revision})
	if err != nil {
		e.log.Debug("last beat failed", "err", err)
	}
}
