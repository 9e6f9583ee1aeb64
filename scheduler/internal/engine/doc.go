// Package engine is the scheduling engine of one replica: the timer loop and
// its heap, catch-up, claims and takeovers, the runs with their leases, the
// duties, manual triggers and the metrics. The scheduler package builds it
// from a validated configuration (Config, JobSpec) and runs it; the admin
// API talks to it through Engine's methods. It is not for users: its API
// follows the facade's needs.
//
// # How a slot is run
//
// Every replica computes the same slots: they are a pure function of the
// schedule, its time zone and time (internal/schedule), never of when the
// process started. One goroutine owns a min-heap of what is due next: each
// job's next nominal slot, slots whose claim failed and must be retried, and
// slots another replica holds. When the earliest entry is due the loop pops
// every due entry and claims the slots in batch calls to the store, the
// takeovers apart from the new slots (claim.go). For each result
// (result.go):
//
//	won       run the job in its own goroutine (see below)
//	held      log "slot lost" (DEBUG); claim again when the holder's lease ends by
//	          the store's reckoning (at least every lease/3), so a dead
//	          holder's slot is taken over at once and a released one soon
//	finished  nothing: the slot never runs again
//	abandoned log it: on_crash skip, or max_attempts spent
//	error     retry with backoff while now <= slot + starting_deadline;
//	          after that the slot is missed
//
// A slot is started only while now <= slot + starting_deadline; a slot seen
// later is logged as "slot missed". At start-up, slots of the last
// starting_deadline are tried as catch_up says (none, latest or all).
//
// Watching is not left to memory alone: at start-up and every minute the
// store's running and retrying markers are read, store-wide (scan.go), and
// watched too, so a slot whose holder died is taken over even when no live
// replica saw it claimed.
// A watch claims with TakeoverOnly: it never creates a marker, so a slot
// whose marker is gone is never run again as new.
//
// # Running a won slot
//
// The job's context derives from the replica's run context. A lease keeper
// renews the claim every lease/3 from its own goroutine, and the replica
// trusts the lease only until sent + lease − margin, where sent is when the
// last successful renewal left, on the monotonic clock (margin is lease/10).
// When the trust window ends without a renewal, or the store refuses one,
// the job's context is cancelled with "lease lost" and the replica records
// nothing for the slot: after the store's lease ends another replica takes
// it over with a higher fence. The holder therefore stops before its
// successor starts, and its late writes, if it ignores cancellation, carry a
// fence lower than the successor's.
//
// Renewals stop for good at timeout + lease, so a job that ignores its
// cancelled context cannot keep its slot from a successor forever.
//
// When the job returns, renewals pause and its outcome (succeeded, failed, or timeout when the
// job's timeout ended its context) is recorded with the claim's fence;
// store errors are retried while the lease is trusted. A panic is recovered
// and recorded as a failure.
//
// # Shutdown
//
// When Run's context ends the loop stops claiming. Running jobs get
// shutdown_grace to finish; then their contexts are cancelled with
// "shutting down", and a job that returns an error is released so another
// replica claims the slot within one renewal interval instead of waiting
// for the lease; a job that returns nil has done its work and is recorded
// as succeeded. Run returns once every goroutine it started has ended, with
// one bound: a job (or duty) that ignores its cancelled context is waited
// for at most its lease and 5 s after the grace, then left behind, logged;
// its lease runs out and its fence guards its successor.
package engine
