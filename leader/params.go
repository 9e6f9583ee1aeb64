package leader

import (
	"time"

	"github.com/slotcron/slotcron/internal/lease"
)

// MinLease is the shortest lease Lead accepts. Production leases are
// seconds long; shorter ones are for tests.
const MinLease = 50 * time.Millisecond

// Params say what to campaign for. The zero value of every optional field
// means its default.
type Params struct {
	// Name is the duty: replicas campaigning for one name elect one leader
	// among them. Required.
	Name string
	// Replica identifies this replica in logs and in the store. Required.
	Replica string
	// Lease is how long a term lasts in the store without renewal, by the
	// store's clock. The leader renews every Lease/3. Required, at least
	// MinLease.
	Lease time.Duration
	// Margin is subtracted from the lease on the leader's side: the leader
	// trusts its term until renewal sent + Lease − Margin, on its monotonic
	// clock. It absorbs clock-rate differences between the leader and the
	// store and the time fn needs to notice cancellation. Zero means
	// DefaultMargin(Lease); it must be less than Lease/2.
	Margin time.Duration
	// Cooldown is how long a replica whose fn returned of its own accord
	// stays out of the campaign, so another replica takes over rather than
	// the same one again. Zero means one Lease.
	Cooldown time.Duration
}

// DefaultMargin is the margin used when Params.Margin is zero: a tenth of
// the lease, at least 10 ms, as the scheduler uses for slot leases.
func DefaultMargin(l time.Duration) time.Duration { return lease.DefaultMargin(l) }

// withDefaults validates p and fills in its defaults.
func (p Params) withDefaults() (Params, error) {
	switch {
	case p.Name == "":
		return p, invalid("empty name")
	case p.Replica == "":
		return p, invalid("%s: empty replica", p.Name)
	case p.Lease < MinLease:
		return p, invalid("%s: lease %v is shorter than %v", p.Name, p.Lease, MinLease)
	case p.Margin < 0 || p.Cooldown < 0:
		return p, invalid("%s: negative margin or cooldown", p.Name)
	}
	if p.Margin == 0 {
		p.Margin = DefaultMargin(p.Lease)
	}
	if p.Margin >= p.Lease/2 {
		return p, invalid("%s: margin %v is not below half the lease %v", p.Name, p.Margin, p.Lease)
	}
	if p.Cooldown == 0 {
		p.Cooldown = p.Lease
	}
	return p, nil
}
