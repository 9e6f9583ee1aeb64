// Package leadertest is the conformance suite every leader backend runs,
// shaped like testing/slogtest: one call checks the whole contract. It is
// for backend authors (package leader/driver), in their tests.
//
// A backend's test calls Run with a Harness that builds electors on one
// private store:
//
//	func TestConformance(t *testing.T) {
//		srv := testserver.StartRedis(t)
//		leadertest.Run(t, leadertest.Harness{
//			New: func(t *testing.T, log *slog.Logger) leader.Elector { ... },
//			NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) { ... },
//		})
//	}
//
// The subtests run in parallel and campaign for names of their own, so the
// electors may share the store.
//
// # What it checks
//
//   - One leader at a time: campaigners contend for one name while terms
//     hand over again and again; an atomic count of the terms whose
//     context is live never exceeds one, and fences grow in term order.
//   - Renewal: a leader holds its term for three leases while another
//     replica campaigns, and is never cancelled; the follower, told each
//     time how long is left, waits again; it wins once the leader resigns.
//   - A stalled leader (every request to the store blackholed) has its
//     term's context cancelled before its successor's term starts, both
//     instants read on this process's monotonic clock; the successor's
//     fence is higher.
//   - Hand-over: when fn returns, or Lead's context ends, a follower that
//     was told seconds remain takes over before the leader's lease could
//     have ended, so the release woke it, and within a generous bound of a
//     few seconds (the measured figure is logged).
//   - Cooldown: a replica whose fn returns stays out for Params.Cooldown,
//     then wins again with a higher fence.
//   - Lead returns when its context ends while following, before the
//     wait it was told ends, and rejects invalid Params with ErrInvalid.
//
// Failover measures takeover after kill -9 of a leader process.
package leadertest
