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
	now := e.now()
	seen := make(map[string]time.Time, len(reps))
	for _, r := range reps {
		seen[r.Replica] = r.Seen
	}
	var skips []slotstore.SkipRequest
	for _, en := range es {
		if paused[en.Job] || !carriedSince(en, seen, now.Add(-sweepSpan)) {
			continue
		}
		a := Audit{Job: en.Job, From: now.Add(-sweepSpan).UTC().Truncate(time.Second), To: now.UTC().Truncate(time.Second), Counts: map[string]int{}}
		a, err := audit(cctx, st, a, en, now)
		if err != nil {
			e.log.Debug("sweep: job not audited", "job", en.Job, "err", err)
			continue
		}
		skips = append(skips, unaccountedSkips(a, en)...)
	}
	e.metrics.unaccounted.Set(float64(len(skips)))
	e.recordUnaccounted(cctx, st, skips)
	return next, nil
}

// unaccountedSkips are the requests that record a's unaccounted slots of
// the spec in force missed: by the store's clock, once their window has
// closed there too.
func unaccountedSkips(a Audit, en slotstore.CatalogEntry) []slotstore.SkipRequest {
	b, _ := ParseBody(en.InForce.Body)
	deadline, _ := time.ParseDuration(b.StartingDeadline)
	history, _ := time.ParseDuration(b.History)
	jitter, _ := time.ParseDuration(b.Jitter)
	var out []slotstore.SkipRequest
	for _, s := range a.Slots {
		if s.Fate == FateUnaccounted && s.Spec == en.InForce.Fingerprint {
			out = append(out, slotstore.SkipRequest{Job: a.Job, Slot: s.Slot, Reason: reasonDown, Retain: history,
				NotBefore: s.Slot.Add(jitter + deadline), Spec: s.Spec})
		}
	}
	return out
}

// recordUnaccounted records skips, counting each slot it recorded in
// slots_missed_total (reason down), and logs how many once.
func (e *Engine) recordUnaccounted(ctx context.Context, st slotstore.Store, skips []slotstore.SkipRequest) {
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
				e.metrics.missed.WithLabelValues(skips[i].Job, missedReason(reasonDown)).Inc()
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

// carriedSince reports whether en's spec in force is a job's (not retired)
// and some replica carrying it beat at or after since. A job whose carriers
// have all been gone longer is taken as removed from every configuration by
// a deploy: its slots are no one's to run, and the sweep leaves them (a
// replica that comes back with the job records what it missed when it
// starts).
func carriedSince(en slotstore.CatalogEntry, seen map[string]time.Time, since time.Time) bool {
	if b, ok := ParseBody(en.InForce.Body); !ok || b.Retired {
		return false
	}
	for r := range en.Carriers {
		if at, ok := seen[r]; ok && !at.Before(since) {
			return true
		}
	}
	return false
}
