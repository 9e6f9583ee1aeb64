package driver

import (
	"context"
	"time"
)

// Driver is the store side of a [leader.Elector]: what a backend
// implements. NewElector turns a Driver into an Elector that runs the
// campaign, the renewals and the trust window the same way for every
// backend.
//
// A Driver must be safe for concurrent use; each Session it opens is used
// by one goroutine at a time.
type Driver interface {
	// Open starts one campaign's session with the store for name, on
	// behalf of holder, a string unique to the campaign (the replica name
	// and a random suffix). The session lives until Close, or until one of
	// its calls fails; the Elector then closes it and opens another. The
	// Elector bounds ctx by one lease.
	Open(ctx context.Context, name, holder string) (Session, error)
}

// Session is one campaign's connection to the store.
type Session interface {
	// Acquire tries once to take the lease of the session's name for
	// lease, by the store's clock. It wins when nobody holds the lease,
	// or when this holder does (a retried Acquire); a win issues a fence
	// greater than every fence issued before for the name, even if the
	// store lost its data since. Otherwise it reports how long the
	// current lease has left by the store's clock.
	Acquire(ctx context.Context, lease time.Duration) (Attempt, error)
	// Renew extends the lease held under fence to lease from now, by the
	// store's clock. It returns an error wrapping [leader.ErrLeaseLost]
	// when the store no longer holds the lease under fence, or when the
	// session can no longer hold it (its connection broke): the term ends
	// at once. Any other error means the renewal may be retried, until
	// the trust window ends.
	Renew(ctx context.Context, fence int64, lease time.Duration) error
	// Release ends the lease held under fence at once and wakes the
	// sessions waiting in Wait, so one of them acquires within a round
	// trip. It returns nil, changing nothing, when fence no longer holds
	// the lease.
	Release(ctx context.Context, fence int64) error
	// Wait blocks for d, or until a holder releases the name's lease, or
	// ctx ends. It may return early for no reason; the Elector then tries
	// Acquire again.
	Wait(ctx context.Context, d time.Duration) error
	// Close ends the session. A lease it holds is not released: it
	// expires, or is released by Release beforehand.
	Close() error
}

// Attempt is the answer to one Acquire.
type Attempt struct {
	// Won is true when the session now holds the lease.
	Won bool
	// Fence is the new term's fence, when Won.
	Fence int64
	// Remaining is how long the current holder's lease has left by the
	// store's clock, when not Won. Zero means try again at once.
	Remaining time.Duration
}
