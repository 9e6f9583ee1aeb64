package fence

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/fencemetrics"
)

// Register adds the package's metrics to r:
//
//	slotcron_fence_rejections_total{resource}  counter: stale writers refused
//	slotcron_fence_repeats_total{resource}     counter: repeats of a slot's committed effect refused
//
// The counters are package-wide: every PG, Redis and Memory of the process
// counts into them. Their label is the resource name: for Redis and
// Memory, the key without the prefix; for PG.Check, the resource; for
// PG.Once, the job's name (not the run key, so the label set stays
// bounded). Keep names to a bounded set. A stale writer refused by a once
// helper counts as a rejection, not a repeat. Nothing is registered until
// Register is called; registering twice on one registry returns nil.
func Register(r prometheus.Registerer) error { return fencemetrics.Register(r) }

// reject counts and logs a rejected write and returns its error.
func reject(log *slog.Logger, resource string, token, highest int64) error {
	fencemetrics.Rejections.WithLabelValues(resource).Inc()
	if log == nil {
		log = slog.Default()
	}
	log.Warn("fence rejected", "resource", resource, "fence", token, "highest", highest)
	return &StaleError{Resource: resource, Fence: token, Highest: highest}
}
