// Package metrics holds the collectors of package leader: the elector of
// package leader/driver reports to them, and leader.Register adds them to a
// registry. They are package-wide, so every Elector of a process reports
// to the same ones.
package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slotcron_leader",
		Help: "1 while this process leads the duty (from winning a term until the duty's function returns), " +
			"0 otherwise. duty: the duty's name.",
	}, []string{"duty"})
	changes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slotcron_leadership_changes_total",
		Help: "Terms this process won for the duty. duty: the duty's name. Summed over replicas, every term begun: " +
			"a new leader, or the same replica again after it lost its term or resigned and cooled down.",
	}, []string{"duty"})
	renewals = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "slotcron_leader_renewal_seconds",
		Help: "Round trip of each successful lease renewal by a leader in this process, in seconds: from sending " +
			"the renewal to its reply. duty: the duty's name. Failed renewals are logged, not observed.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"duty"})
)

// Collectors returns every collector, for leader.Register.
func Collectors() []prometheus.Collector { return []prometheus.Collector{leader, changes, renewals} }

// Duty is one duty's children of the collectors.
type Duty struct {
	Leader  prometheus.Gauge
	Changes prometheus.Counter
	Renewal prometheus.Observer
}

// For returns duty's children.
func For(duty string) Duty {
	return Duty{
		Leader:  leader.WithLabelValues(duty),
		Changes: changes.WithLabelValues(duty),
		Renewal: renewals.WithLabelValues(duty),
	}
}
