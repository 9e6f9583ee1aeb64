package driver

import (
	"fmt"
	"time"

	"github.com/slotcron/slotcron/internal/lease"
	"github.com/slotcron/slotcron/leader"
)

// minLease is the shortest lease Lead accepts, as leader.Params.Lease
// states.
const minLease = 50 * time.Millisecond

// withDefaults validates p and fills in its defaults (leader.Params).
func withDefaults(p leader.Params) (leader.Params, error) {
	switch {
	case p.Name == "":
		return p, invalid("empty name")
	case p.Replica == "":
		return p, invalid("%s: empty replica", p.Name)
	case p.Lease < minLease:
		return p, invalid("%s: lease %v is shorter than %v", p.Name, p.Lease, minLease)
	case p.Margin < 0 || p.Cooldown < 0:
		return p, invalid("%s: negative margin or cooldown", p.Name)
	}
	if p.Margin == 0 {
		p.Margin = lease.DefaultMargin(p.Lease)
	}
	if p.Margin >= p.Lease/2 {
		return p, invalid("%s: margin %v is not below half the lease %v", p.Name, p.Margin, p.Lease)
	}
	if p.Cooldown == 0 {
		p.Cooldown = p.Lease
	}
	return p, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{leader.ErrInvalid}, args...)...)
}
