package leader

import (
	"context"
	"time"
)

// Elector elects one leader per name among the replicas that campaign for
// it. See the package documentation for what leadership guarantees. A
// backend's constructor returns one (redisleader.New, pgleader.New,
// etcdleader.New).
type Elector interface {
	// Lead campaigns for p.Name until ctx ends and calls fn once for every
	// term this replica wins, on the calling goroutine, with a context that
	// is cancelled when the term ends and the term's fence:
	//
	//   - fn returning of its own accord resigns: the lease is released at
	//     once, so a waiting replica takes over within a round trip, and
	//     this replica stays out of the campaign for p.Cooldown.
	//   - ctx ending cancels the term's context; when fn returns, the
	//     lease is released and Lead returns.
	//   - A term that cannot be renewed ends at renewal sent + Lease −
	//     Margin, and one the store says is gone ends at once: fn's context
	//     is cancelled (context.Cause says why: ErrNotRenewed,
	//     ErrLeaseLost) and, once fn returns, the campaign goes on.
	//
	// Lead returns nil once ctx has ended and everything it started has
	// finished, fn included: a fn that ignores its context holds Lead up,
	// and a store call under way when ctx ends is given up to one Lease.
	// Store errors never end Lead; they are logged and retried. Lead
	// returns an error wrapping ErrInvalid for bad Params, before
	// campaigning.
	//
	// Lead may be called many times at once, for the same or different
	// names; each call is one campaign.
	Lead(ctx context.Context, p Params, fn func(ctx context.Context, t Term)) error
}

// Term is one replica's leadership of one name: from the win to the
// cancellation of its context.
type Term struct {
	// Name is the duty's name, Params.Name.
	Name string
	// Replica is this replica, Params.Replica.
	Replica string
	// Fence is greater than the fence of every earlier term of Name. Pass
	// it to the resources the leader writes (package fence), so that a
	// leader that outlived its term is refused.
	Fence int64
	// Start is when the term began on this replica (with a monotonic
	// reading): after the store granted the lease, before fn was called.
	Start time.Time
}
