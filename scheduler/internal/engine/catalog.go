// The catalog as a replica follows it: each job enrolled with its spec; a
// job whose spec is not the one in force set aside, claiming and skipping
// none of its slots, with a WARN line and a gauge that say so; and the
// watch that puts this replica's spec in force again once no live replica
// carries the one in force (slotstore's package documentation, The
// catalog).

package engine

import (
	"context"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// catalogEvery is how often a replica with jobs in conflict reads the
// catalog and the beats: how soon after the last replica of the spec in
// force is gone (its beat's TTL, or at once after a clean shutdown) its
// own spec takes force.
const catalogEvery = 5 * time.Second

// inConflict reports whether p's spec is not the spec in force.
func (p *plan) inConflict() bool { return p.conflict.Load() != nil }

// noteSpec acts on f, the spec in force of p's job as the store answered
// it: p is in conflict while f is another spec, and is not once f is its
// own or none. Each spec in force p conflicts with is logged once. A plan
// a reload replaced is left alone: the job's gauge is its successor's.
func (e *Engine) noteSpec(p *plan, f slotstore.SpecRecord) {
	if p.retired.Load() {
		return
	}
	if p.run != "" {
		e.noteScheduleSpec(p, f)
		return
	}
	if f.Fingerprint == "" || f.Fingerprint == p.spec.Fingerprint {
		if old := p.conflict.Swap(nil); old != nil {
			e.log.Info("job's spec is in force again; claiming its slots", "job", p.name, "spec", p.spec.Fingerprint)
			e.metrics.specConflict.WithLabelValues(p.name).Set(0)
		}
		return
	}
	if old := p.conflict.Swap(&f); old != nil && old.Fingerprint == f.Fingerprint {
		return
	}
	e.metrics.specConflict.WithLabelValues(p.name).Set(1)
	e.log.Warn("job's spec is not the spec in force; not claiming its slots", "job", p.name,
		"spec", p.spec.Fingerprint, "revision", p.spec.Revision, "in_force", f.Fingerprint, "in_force_revision", f.Revision,
		"in_force_by", f.Replica, "in_force_since", f.Since.UTC().Format(time.RFC3339), "differs", differs(p.spec.Body, f.Body))
}

// differs says what differs between this replica's spec body and the one in
// force, field by field.
func differs(own, inForce []byte) string {
	a, okA := ParseBody(own)
	b, okB := ParseBody(inForce)
	if !okA || !okB {
		return "the spec in force was written by a build that does not say"
	}
	d := Differences(a, b)
	if len(d) == 0 {
		return "nothing this build reads (another build's fields)"
	}
	return strings.Join(d, "; ")
}

// superseded sets p aside after the store refused one of its claims or
// skips for naming a spec not in force, and asks the watch to read which.
func (e *Engine) superseded(p *plan) {
	if p.retired.Load() {
		return
	}
	if p.run != "" {
		e.noteScheduleSpec(p, slotstore.SpecRecord{Fingerprint: "(being read)"})
		return
	}
	if p.conflict.CompareAndSwap(nil, &slotstore.SpecRecord{Fingerprint: "(being read)"}) {
		e.metrics.specConflict.WithLabelValues(p.name).Set(1)
	}
	select {
	case e.catalogKick <- struct{}{}:
	default:
	}
}

// followCatalog checks the jobs in conflict every catalogEvery, and when a
// claim finds one, until ctx ends.
func (e *Engine) followCatalog(ctx context.Context, st slotstore.Store) {
	t := time.NewTicker(catalogEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.catalogKick:
		}
		if err := e.checkConflicts(ctx, st); err != nil && ctx.Err() == nil {
			e.log.Warn("reading the catalog failed", "err", err)
		}
	}
}

// checkConflicts reads the entries of the jobs in conflict and the beats:
// a job whose spec is in force again is claimed again, and one whose spec
// in force has no live carrier is enrolled to supersede it.
func (e *Engine) checkConflicts(ctx context.Context, st slotstore.Store) error {
	set := e.jobs() // one configuration throughout, whatever a reload does meanwhile
	var names []string
	for _, p := range set.config() {
		if p.inConflict() {
			names = append(names, p.name)
		}
	}
	for len(names) > 0 {
		n := min(len(names), maxBatch)
		if err := e.checkSome(ctx, st, set, names[:n]); err != nil {
			return err
		}
		names = names[n:]
	}
	return nil
}

func (e *Engine) checkSome(ctx context.Context, st slotstore.Store, set *planSet, names []string) error {
	cctx, cancel := context.WithTimeout(ctx, maxStoreWait)
	defer cancel()
	entries, err := st.Catalog(cctx, slotstore.CatalogParams{Jobs: names, Limit: len(names)})
	if err != nil {
		return err
	}
	reps, err := st.Replicas(cctx)
	if err != nil {
		return err
	}
	live := make(map[string]bool, len(reps))
	for _, r := range reps {
		live[r.Replica] = r.Live
	}
	offer := slotstore.EnrollParams{Replica: e.replica}
	found := make(map[string]bool, len(entries))
	for _, en := range entries {
		p := set.byName[en.Job]
		found[en.Job] = true
		e.noteSpec(p, en.InForce)
		if !p.inConflict() || !mayReplace(p.spec, en, live, e.replica) {
			continue
		}
		s := p.spec
		s.Supersedes = en.InForce.Fingerprint
		offer.Jobs, offer.Specs = append(offer.Jobs, p.name), append(offer.Specs, s)
	}
	for _, j := range names {
		if !found[j] { // the store lost its catalog: enroll anew
			offer.Jobs, offer.Specs = append(offer.Jobs, j), append(offer.Specs, set.byName[j].spec)
		}
	}
	if len(offer.Jobs) == 0 {
		return nil
	}
	gens, err := st.Enroll(cctx, offer)
	if err != nil {
		return err
	}
	for _, g := range gens {
		e.noteSpec(set.byName[g.Job], g.Spec)
	}
	return nil
}

// mayReplace reports whether own, a replica's spec in conflict with en's
// spec in force, is to supersede it. With revisions on both, only a higher
// revision does (the higher revision wins whatever the order, a missed
// beat included). Otherwise when no live replica but this one carries the
// spec in force: this one, in conflict, carries it no longer (an
// enrolment of a reload that failed after the store applied it).
func mayReplace(own slotstore.Spec, en slotstore.CatalogEntry, live map[string]bool, self string) bool {
	if own.Revision > 0 && en.InForce.Revision > 0 {
		return own.Revision > en.InForce.Revision
	}
	for r := range en.Carriers {
		if live[r] && r != self {
			return false
		}
	}
	return true
}

// TakesForce predicts whether replica's enrolment of s (at start-up: no
// Supersedes) would put s in force over en, the job's catalog entry (zero
// for a job the catalog does not have): the store's rule of The catalog in
// slotstore's package documentation, which every store applies. It is true
// for s already in force. When it is false, the replica conflicts and
// claims nothing of the job until s takes force by the watch's rule
// (mayReplace: never while both revisions are set and s's is not higher).
func TakesForce(s slotstore.Spec, en slotstore.CatalogEntry, replica string) bool {
	f := en.InForce
	switch {
	case f.Fingerprint == "", f.Fingerprint == s.Fingerprint, s.Supersedes == f.Fingerprint:
		return true
	case len(en.Carriers) == 0 || len(en.Carriers) == 1 && carries(en, replica):
		return true // no carrier left once the enroller carries s instead
	case s.Revision > 0 && f.Revision > 0:
		return s.Revision > f.Revision
	}
	for _, p := range en.Past {
		if p.Fingerprint == s.Fingerprint {
			return false // replaced once: a restart does not bring it back
		}
	}
	return true
}

// carries reports whether replica is a carrier of en's spec in force.
func carries(en slotstore.CatalogEntry, replica string) bool {
	_, ok := en.Carriers[replica]
	return ok
}
