// Package fencemetrics holds the counters of package fence's helpers, so
// that the scheduler registers them without linking the helpers' clients
// (pgx, go-redis): a binary that never fences a write in Redis does not
// link go-redis for the sake of a counter. Package fence documents them.
package fencemetrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Rejections counts the writes every helper of this process rejected.
var Rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slotcron_fence_rejections_total",
	Help: "Writes rejected because their fence was below the highest the resource had seen, by resource.",
}, []string{"resource"})

// Repeats counts the once-per-slot writes every helper of this process
// refused because the slot's effect was already committed.
var Repeats = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slotcron_fence_repeats_total",
	Help: "Once-per-slot writes refused because the slot's effect was already committed (a repeat after commit-then-crash, or a retry), by resource.",
}, []string{"resource"})

// Register adds both counters to r; registering twice on one registry
// returns nil.
func Register(r prometheus.Registerer) error {
	for _, c := range []*prometheus.CounterVec{Rejections, Repeats} {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) && are.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	return nil
}
