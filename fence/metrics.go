package fence

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// rejections counts the writes every helper of this process rejected.
var rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slotcron_fence_rejections_total",
	Help: "Writes rejected because their fence was below the highest the resource had seen, by resource.",
}, []string{"resource"})

// Register adds the package's metrics to r:
//
//	slotcron_fence_rejections_total{resource}  counter
//
// The counter is package-wide: every PG, Redis and Memory of the process
// counts into it, and its label is the resource name (for Redis, the key
// without the prefix), so keep names to a bounded set. Nothing is
// registered until Register is called; registering twice on one registry
// returns nil.
func Register(r prometheus.Registerer) error {
	if err := r.Register(rejections); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) && are.ExistingCollector == rejections {
			return nil
		}
		return err
	}
	return nil
}

// reject counts and logs a rejected write and returns its error.
func reject(log *slog.Logger, resource string, token, highest int64) error {
	rejections.WithLabelValues(resource).Inc()
	if log == nil {
		log = slog.Default()
	}
	log.Warn("fence rejected", "resource", resource, "fence", token, "highest", highest)
	return &StaleError{Resource: resource, Fence: token, Highest: highest}
}
