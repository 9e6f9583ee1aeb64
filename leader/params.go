package leader

import "time"

// Params say what to campaign for. The zero value of every optional field
// means its default.
type Params struct {
	// Name is the duty: replicas campaigning for one name elect one leader
	// among them. Required.
	Name string
	// Replica identifies this replica in logs and in the store. Required.
	Replica string
	// Lease is how long a term lasts in the store without renewal, by the
	// store's clock. The leader renews every Lease/3. Required, and at
	// least 50 ms, the shortest Lead accepts; production leases are
	// seconds long, shorter ones are for tests.
	Lease time.Duration
	// Margin is subtracted from the lease on the leader's side: the leader
	// trusts its term until renewal sent + Lease − Margin, on its monotonic
	// clock. It absorbs clock-rate differences between the leader and the
	// store and the time fn needs to notice cancellation. Zero means a
	// tenth of Lease, at least 10 ms; it must be less than Lease/2.
	Margin time.Duration
	// Cooldown is how long a replica whose fn returned of its own accord
	// stays out of the campaign, so another replica takes over rather than
	// the same one again. Zero means one Lease.
	Cooldown time.Duration
}
