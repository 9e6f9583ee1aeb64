package leader

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid reports Params that Lead refuses: an empty name or
	// replica, a lease shorter than MinLease, a margin or cooldown out of
	// range.
	ErrInvalid = errors.New("leader: invalid params")
	// ErrLeaseLost is the cause of a term's context cancelled because the
	// store no longer holds the term's lease under its fence, or the
	// session that held it broke. A Driver's Renew returns it (wrapped)
	// for the same reasons.
	ErrLeaseLost = errors.New("leader: lease lost")
	// ErrNotRenewed is the cause of a term's context cancelled because the
	// trust window ended before a renewal succeeded.
	ErrNotRenewed = errors.New("leader: lease not renewed in time")
	// ErrResigned is the cause of a term's context cancelled because fn
	// returned: the elector hands leadership over.
	ErrResigned = errors.New("leader: resigned")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
