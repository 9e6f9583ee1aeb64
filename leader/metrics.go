package leader

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/leader/internal/metrics"
)

// Register adds the metrics of every Elector to r, each labelled duty with
// Params.Name:
//
//	slotcron_leader{duty}                    gauge: 1 while this process leads the duty, else 0
//	slotcron_leadership_changes_total{duty}  counter: terms this process won
//	slotcron_leader_renewal_seconds{duty}    histogram: round trip of each successful renewal, seconds
//
// The collectors are package-wide: every Elector of the process reports to
// them. Nothing is registered until Register is called; registering twice
// on one registry returns nil.
func Register(r prometheus.Registerer) error {
	for _, c := range metrics.Collectors() {
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
