// Package driver is for authors of leader backends, not for their users:
// it is what a backend implements, and NewElector, which turns that into
// the leader.Elector the backend's constructor returns. Users import
// package leader and a backend (redisleader, pgleader), never this one.
//
// A backend implements Driver and Session: a session per campaign that
// acquires, renews and releases the lease of one name in the store, and
// waits for a release. Everything else is NewElector's, the same for every
// backend: validating leader.Params, the campaign loop, renewal every
// Lease/3, the trust window that cancels a term's context, resigning and
// cooldown, logs and metrics (package leader documents them, with what
// leadership guarantees).
//
//	func New(c *Client, o Options) leader.Elector {
//		return driver.NewElector(&backend{c: c}, driver.Options{Logger: o.Logger})
//	}
//
// What the Elector relies on is stated on Driver and Session: Acquire
// grants a lease that runs by the store's clock and issues fences that
// only grow, Renew and Release are scoped to the term's fence, and Renew
// says when the lease is gone (wrapping leader.ErrLeaseLost) rather than
// failing in a way that could be retried. leadertest.Run checks a backend
// against that, through the Elector NewElector builds.
package driver
