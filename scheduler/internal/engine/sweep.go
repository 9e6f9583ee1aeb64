// The sweep: one live replica in the cluster audits the recent slots of
// every job in the catalog and records those no replica recorded as missed
// (reason down), so that after any outage every slot has a record, and
// slots_missed_total counts it.

package engine

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// sweepEvery is how often the sweeping replica sweeps.
	sweepEvery = time.Minute
	// sweepSpan is how often each job is audited, at the most: a pass
	// round the catalog audits one of sweepSpan/sweepEvery shares of its
	// jobs (by a hash of the name), so that a job costs the store one read
	// a quarter hour, not one a minute. An audit looks back sweepSpan and
	// two sweeps more: the slots before were swept before, or recorded by
	// the start-up of the replica that came back first.
	sweepSpan = 15 * time.Minute
	// sweepJobs is how many jobs of the catalog one sweep reads; the next
	// sweep goes on after the last, round the catalog.
	sweepJobs = 1000
)

// sweepRound is where the sweeping replica is in its round of the catalog:
// the page to read next (after), the pages read so far of this pass and
// of the last whole one, and the share of the jobs this pass audits.
type sweepRound struct {
	after         string
	pages, last   int
	share, shares int
	// passes is the clock's count of passes at this pass's beginning.
	passes int64
	// whole makes the next pass audit every job: a sweep failed (the
	// store was down, and the replicas may have failed to record what they
	// missed meanwhile). A replica coming back after every replica was
	// down records its own jobs' missed slots as it starts (catch-up).
	whole bool
	// found is the unaccounted slots each share's last audit found and
	// could not record yet (their windows still open by the store's
	// clock, or the store failing), for slotcron_slots_unaccounted.
	found map[int]int
}

// next readies the round for its next page at now: at a pass's
// beginning, the share it audits, of as many as a whole pass can take and
// still audit every job once in sweepSpan (one, for a catalog of
// sweepSpan/sweepEvery pages or more). The share follows the clock, so a
// replica that takes the sweep over from another goes on where it was.
func (r *sweepRound) next(now time.Time) {
	if r.after != "" {
		return
	}
	if r.pages > 0 {
		r.last = r.pages
	}
	r.pages = 0
	shares := max(1, int(sweepSpan/sweepEvery)/max(r.last, 1))
	passes := now.Unix() / int64(sweepEvery/time.Second) / int64(max(r.last, 1))
	if r.whole || r.passes != 0 && passes > r.passes+1 {
		// A failure, or a pass the clock skipped (a sweep slower than the
		// ticker, a process frozen or suspended): the share it skipped
		// would go unaudited for a round.
		shares, r.whole = 1, false
	}
	r.passes = passes
	if shares != r.shares {
		clear(r.found) // counted by other shares than this pass's
	}
	r.shares = shares
	r.share = int(passes % int64(r.shares))
}

// newSweepRound is the round of a replica that has just begun to sweep.
func newSweepRound() sweepRound { return sweepRound{found: map[int]int{}} }

// audits reports whether this pass audits job.
func (r *sweepRound) audits(job string) bool {
	if r.shares <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(job))
	return int(h.Sum32()%uint32(r.shares)) == r.share
}

// sweep sweeps every sweepEvery until ctx ends, when this replica is the
// sweeping one: the live replica first by name.
func (e *Engine) sweep(ctx context.Context, st slotstore.Store) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	r := newSweepRound()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.next(e.now())
		if err := e.sweepOnce(ctx, st, &r); err != nil {
			r.whole = true
			if ctx.Err() == nil {
				e.log.Warn("sweep of unaccounted slots failed", "err", err)
			}
		}
	}
}

// sweepOnce reads up to sweepJobs jobs of the catalog after r's, audits
// those of r's share, records their unaccounted slots missed, and moves r
// on to the page after.
func (e *Engine) sweepOnce(ctx context.Context, st slotstore.Store, r *sweepRound) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reps, err := st.Replicas(cctx)
	if err != nil {
		return err
	}
	if !firstLive(reps, e.replica) {
		e.metrics.unaccounted.Set(0)
		*r = newSweepRound()
		return nil
	}
	ps, err := st.Pauses(cctx)
	if err != nil || ps.All {
		// Slots of a paused cluster are the replicas' to record, paused;
		// once it resumes, the pass after audits every job, as the shares
		// went round meanwhile.
		r.whole = true
		return err
	}
	paused := make(map[string]bool, len(ps.Jobs))
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	after := r.after
	es, err := st.Catalog(cctx, slotstore.CatalogParams{After: after, Limit: sweepJobs})
	if err != nil {
		return err
	}
	next := ""
	if len(es) == sweepJobs {
		next = es[len(es)-1].Job
	}
	e.enrollMissing(cctx, st, es, after, next != "")
	live := make(map[string]bool, len(reps))
	for _, r := range reps {
		live[r.Replica] = r.Live
	}
	skips, labels, failed := e.auditPage(cctx, st, r, es, paused, live)
	if after == "" {
		r.found[r.share] = 0
	}
	settled, err := e.recordUnaccounted(cctx, st, skips, labels)
	r.found[r.share] += len(skips) - settled
	if failed || err != nil {
		r.whole = true
	}
	total := 0
	for _, n := range r.found {
		total += n
	}
	e.metrics.unaccounted.Set(float64(total))
	r.after = next
	r.pages++
	return nil
}

// auditPage audits the entries es of r's share that no pause holds and a
// live replica carries, and returns the requests that record their
// unaccounted slots, each job's metric label, and whether an audit failed
// for the store's sake.
func (e *Engine) auditPage(ctx context.Context, st slotstore.Store, r *sweepRound, es []slotstore.CatalogEntry,
	paused, live map[string]bool) (skips []slotstore.SkipRequest, labels map[string]string, failed bool) {
	now := e.now()
	labels = make(map[string]string, len(es))
	for _, en := range es {
		if paused[en.Job] || !r.audits(en.Job) || !carriedLive(en, live) {
			continue
		}
		labels[en.Job] = cmp.Or(en.Run, en.Job)
		// Back to the audit before this one of the job, and the slots
		// still in their windows then: a pending slot is settled at the
		// next audit.
		back := sweepSpan + 2*sweepEvery + pendingFor(en)
		a, err := AuditEntry(ctx, st, en, now.Add(-back), now, now)
		if err != nil {
			e.log.Debug("sweep: job not audited", "job", en.Job, "err", err)
			var u unreadable
			if !errors.Is(err, ErrNotInCatalog) && !errors.As(err, &u) {
				failed = true // the store's: audited again on the next pass, whole
			}
			continue
		}
		skips = append(skips, unaccountedSkips(a, en)...)
	}
	return skips, labels, failed
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
// slots_missed_total (reason down) under its job's label in labels, logs
// how many once, and returns how many of skips have a record now (its own,
// or another replica's it found).
func (e *Engine) recordUnaccounted(ctx context.Context, st slotstore.Store, skips []slotstore.SkipRequest, labels map[string]string) (int, error) {
	recorded, settled := 0, 0
	defer func() {
		if recorded > 0 {
			e.log.Info("slots no replica recorded, recorded missed", "slots", recorded, "reason", reasonDown)
		}
	}()
	for len(skips) > 0 {
		n := min(len(skips), maxBatch)
		res, err := st.Skip(ctx, slotstore.SkipParams{Replica: e.replica, Requests: skips[:n]})
		e.metrics.storeCall(err)
		if err != nil {
			e.log.Warn("recording unaccounted slots failed", "slots", n, "err", err)
			return settled, err
		}
		for i, r := range res {
			if r.Status == slotstore.Skipped && r.Marker.Holder == e.replica && r.Marker.Reason == reasonDown {
				e.metrics.missed.WithLabelValues(labels[skips[i].Job], missedReason(reasonDown)).Inc()
				recorded++
			}
			if r.Status != slotstore.NotYet {
				settled++
			}
		}
		skips = skips[n:]
	}
	return settled, nil
}

// pendingFor is how long after its instant a slot of en may still start,
// under any of its specs: its jitter and starting deadline, and the
// margin the audit gives the clocks. A slot an audit finds pending is
// settled by the job's next.
func pendingFor(en slotstore.CatalogEntry) time.Duration {
	d := time.Duration(0)
	for _, r := range append([]slotstore.SpecRecord{en.InForce}, en.Past...) {
		b, ok := ParseBody(r.Body)
		if !ok {
			continue
		}
		jitter, _ := time.ParseDuration(b.Jitter)
		deadline, _ := time.ParseDuration(b.StartingDeadline)
		d = max(d, jitter+deadline)
	}
	return d + clockMargin
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
