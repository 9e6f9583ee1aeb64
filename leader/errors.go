package leader

import "errors"

var (
	// ErrInvalid reports Params that Lead refuses: an empty name or
	// replica, a lease shorter than Params.Lease allows, a margin or
	// cooldown out of range.
	ErrInvalid = errors.New("leader: invalid params")
	// ErrLeaseLost is the cause of a term's context cancelled because the
	// store no longer holds the term's lease under its fence, or the
	// session that held it broke.
	ErrLeaseLost = errors.New("leader: lease lost")
	// ErrNotRenewed is the cause of a term's context cancelled because the
	// trust window ended before a renewal succeeded.
	ErrNotRenewed = errors.New("leader: lease not renewed in time")
	// ErrResigned is the cause of a term's context cancelled because fn
	// returned: the elector hands leadership over.
	ErrResigned = errors.New("leader: resigned")
)
