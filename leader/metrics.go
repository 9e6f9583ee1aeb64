package leader

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	leaderGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slotcron_leader",
		Help: "1 while this replica leads the duty, 0 otherwise.",
	}, []string{"duty"})
	changes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slotcron_leadership_changes_total",
		Help: "Terms this replica won, by duty. Summed over replicas: how often leadership changed hands.",
	}, []string{"duty"})
	renewals = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slotcron_leader_renewal_seconds",
		Help:    "Time a leader's lease renewal took, successful or not, by duty.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"duty"})
)

// Register adds the package's metrics to r:
//
//	slotcron_leader{duty}                    gauge: 1 while this replica leads
//	slotcron_leadership_changes_total{duty}  counter: terms won here
//	slotcron_leader_renewal_seconds{duty}     histogram: renewal latency
//
// The collectors are package-wide: every Elector of the process reports to
// them. Nothing is registered until Register is called; registering twice
// on one registry returns nil.
func Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{leaderGauge, changes, renewals} {
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

// metrics are one duty's children of the collectors.
type metrics struct {
	leader  prometheus.Gauge
	changes prometheus.Counter
	renewal prometheus.Observer
}

func metricsFor(duty string) metrics {
	return metrics{
		leader:  leaderGauge.WithLabelValues(duty),
		changes: changes.WithLabelValues(duty),
		renewal: renewals.WithLabelValues(duty),
	}
}
