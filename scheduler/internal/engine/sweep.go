// The sweep: one live replica in the cluster audits the recent slots of
// every job in the catalog and records those no replica recorded as missed
// (reason down), so that after any outage every slot has a record, and
// slots_missed_total counts it.

package engine

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// sweepEvery is how often the sweeping replica sweeps.
	sweepEvery = time.Minute
	// sweepSpan is how far back a sweep looks: slots older than that were
	// swept before, or recorded by the start-up of the replica that came
	// back first.
	sweepSpan = 15 * time.Minute
	// sweepJobs is how many jobs of the catalog one sweep audits; the next
	// sweep goes on after the last, round the catalog.
	sweepJobs = 1000
)

// sweep sweeps every sweepEvery until ctx ends, when this replica is the
// sweeping one: the live replica first by name.
func (e *Engine) sweep(ctx context.Context, st slotstore.Store) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	after := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := e.sweepOnce(ctx, st, after)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("sweep of unaccounted slots failed", "err", err)
			}
			continue
		}
		after = next
	}
}

// sweepOnce audits up to sweepJobs jobs after the job after, records their
// unaccounted slots missed, and returns the job to go on after.
func (e *Engine) sweepOnce(ctx context.Context, st slotstore.Store, after string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reps, err := st.Replicas(cctx)
	if err != nil {
		return after, err
	}
	if !firstLive(reps, e.replica) {
		e.metrics.unaccounted.Set(0)
		return "", nil
	}
	ps, err := st.Pauses(cctx)
	if err != nil || ps.All {
		return after, err // slots of a paused cluster are the replicas' to record, paused
	}
	paused := make(map[string]bool, len(ps.Jobs))
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	es, err := st.Catalog(cctx, slotstore.CatalogParams{After: after, Limit: sweepJobs})
	if err != nil {
		return after, err
	}
	next := ""
	if len(es) == sweepJobs {
		next = es[len(es)-1].Job
	}
	e.enrollMissing(cctx, st, es, after, next != "")
	now := e.now()
	live := make(map[string]bool, len(reps))
	for _, r := range reps {
		live[r.Replica] = r.Live
	}
	var skips []slotstore.SkipRequest
	labels := make(map[string]string, len(es))
	for _, en := range es {
		if paused[en.Job] || !carriedLive(en, live) {
			continue
		}
		labels[en.Job] = en.Job
		if en.Run != "" {
			labels[en.Job] = en.Run
		}
		a, err := AuditEntry(cctx, st, en, now.Add(-sweepSpan), now, now)
		if err != nil {
			e.log.Debug("sweep: job not audited", "job", en.Job, "err", err)
			continue
		}
		skips = append(skips, unaccountedSkips(a, en)...)
	}
	e.metrics.unaccounted.Set(float64(len(skips)))
	e.recordUnaccounted(cctx, st, skips, labels)
	return next, nil
}

// unaccountedSkips are the requests that record a's unaccounted slots
// missed, each under the spec in force at its time: by the store's clock,
// once its window has closed there too. A slot of the spec in force names
// it, so the store refuses the skip if another spec takes force meanwhile;
// one of a spec replaced since (an outage across a deploy that changed the
// job) names none, for the store would refuse any other spec, and no
// replica claims it: its spec is no longer in force.
func unaccountedSkips(a Audit, en slotstore.CatalogEntry) []slotstore.SkipRequest {
	bodies := map[string][]byte{en.InForce.Fingerprint: en.InForce.Body}
	for _, p := range en.Past {
		if _, ok := bodies[p.Fingerprint]; !ok {
			bodies[p.Fingerprint] = p.Body
		}
	}
	var out []slotstore.SkipRequest
	type spec struct {
		b   SpecBody
		loc *time.Location // of its schedule, when it skips calendars
	}
	specs := map[string]spec{} // by fingerprint, each body read once
	for _, s := range a.Slots {
		body, ok := bodies[s.Spec]
		if s.Fate != FateUnaccounted || !ok {
			continue
		}
		sp, seen := specs[s.Spec]
		if !seen {
			sp.b, _ = ParseBody(body)
			if len(sp.b.Except) > 0 {
				if sc, err := sp.b.Slots(); err == nil {
					sp.loc = sc.Location()
				}
			}
			specs[s.Spec] = sp
		}
		b := sp.b
		deadline, _ := time.ParseDuration(b.StartingDeadline)
		history, _ := time.ParseDuration(b.History)
		jitter, _ := time.ParseDuration(b.Jitter)
		req := slotstore.SkipRequest{Job: a.Job, Slot: s.Slot, Reason: reasonDown, Retain: history,
			NotBefore: s.Slot.Add(jitter + deadline)}
		if reason := SkippedBy(b.Except, sp.loc, s.Slot); reason != "" {
			// A slot a calendar of its spec skips was never to run: no
			// replica was needed for it.
			req.Reason, req.NotBefore = reason, s.Slot
		}
		if s.Spec == en.InForce.Fingerprint {
			req.Spec = s.Spec
		}
		out = append(out, req)
	}
	return out
}

// recordUnaccounted records skips, counting each slot it recorded in
// slots_missed_total (reason down) under its job's label in labels, and
// logs how many once.
func (e *Engine) recordUnaccounted(ctx context.Context, st slotstore.Store, skips []slotstore.SkipRequest, labels map[string]string) {
	recorded := 0
	for len(skips) > 0 {
		n := min(len(skips), maxBatch)
		res, err := st.Skip(ctx, slotstore.SkipParams{Replica: e.replica, Requests: skips[:n]})
		e.metrics.storeCall(err)
		if err != nil {
			e.log.Warn("recording unaccounted slots failed", "slots", n, "err", err)
			return
		}
		for i, r := range res {
			if r.Status == slotstore.Skipped && r.Marker.Holder == e.replica && r.Marker.Reason == reasonDown {
				e.metrics.missed.WithLabelValues(labels[skips[i].Job], missedReason(reasonDown)).Inc()
				recorded++
			}
		}
		skips = skips[n:]
	}
	if recorded > 0 {
		e.log.Info("slots no replica recorded, recorded missed", "slots", recorded, "reason", reasonDown)
	}
}

// firstLive reports whether replica is the live replica first by name
// among reps (which Replicas sorts by name).
func firstLive(reps []slotstore.Replica, replica string) bool {
	for _, r := range reps {
		if r.Live {
			return r.Replica == replica
		}
	}
	return false
}

// carriedLive reports whether en's spec in force is a job's (not retired)
// and some live replica carries it, or en is a live schedule held as data
// and some replica is live (each replica whose build registers its job
// runs it, none enrolls it). A job no live replica carries is taken
// as removed from every configuration by a deploy, or down with all its
// replicas: the sweep leaves its slots until a replica that has the job is
// back (it enrolls, so carries it, and the sweep then covers the outage's
// last sweepSpan; that replica also records what it missed when it starts).
func carriedLive(en slotstore.CatalogEntry, live map[string]bool) bool {
	if b, ok := ParseBody(en.InForce.Body); !ok || b.Retired || en.Deleted {
		return false
	}
	if en.Run != "" {
		for _, l := range live {
			if l {
				return true
			}
		}
		return false
	}
	for r := range en.Carriers {
		if live[r] {
			return true
		}
	}
	return false
}

// enrollMissing enrolls the jobs of this replica's configuration that the
// catalog page es (the jobs after after, full when more follow) should hold
// and does not: the store lost its catalog (an empty restart, a replaced
// file), which no replica's claims notice, for a claim of a job with no
// spec in force is not checked. The catalog is thus whole again within a
// sweep round; replicas of other specs then follow the rule as at a start.
func (e *Engine) enrollMissing(ctx context.Context, st slotstore.Store, es []slotstore.CatalogEntry, after string, full bool) {
	have := make(map[string]bool, len(es))
	for _, en := range es {
		have[en.Job] = true
	}
	set := e.jobs()
	p := slotstore.EnrollParams{Replica: e.replica}
	for _, pl := range set.config() {
		if have[pl.name] || pl.name <= after || (full && pl.name > es[len(es)-1].Job) || len(p.Jobs) == maxBatch {
			continue
		}
		p.Jobs, p.Specs = append(p.Jobs, pl.name), append(p.Specs, pl.spec)
	}
	if len(p.Jobs) == 0 {
		return
	}
	gens, err := st.Enroll(ctx, p)
	e.metrics.storeCall(err)
	if err != nil {
		e.log.Warn("enrolling jobs missing from the catalog failed", "jobs", len(p.Jobs), "err", err)
		return
	}
	e.log.Warn("jobs missing from the catalog enrolled again: the store lost its catalog", "jobs", len(p.Jobs), "first", p.Jobs[0])
	for _, g := range gens {
		e.noteSpec(set.byName[g.Job], g.Spec)
	}
}
