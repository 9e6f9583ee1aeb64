package slotstore

import "errors"

var (
	// ErrSlotTaken reports a claim that did not win: the slot is held by a
	// live lease, waiting for its retry, finished, abandoned or skipped.
	// ClaimResult.Err returns it.
	ErrSlotTaken = errors.New("slotstore: slot taken")
	// ErrLeaseLost reports a renew, finish or release whose fence is no
	// longer the slot's current fence, or whose slot is no longer running
	// (taken over, replaced, abandoned...). Nothing was changed.
	ErrLeaseLost = errors.New("slotstore: lease lost")
	// ErrFinished reports a renew whose slot is done or retrying under the
	// presented fence: the claim's own run recorded its end (in its own
	// transaction, with CompleteTx), so there is no lease left to keep, and
	// none was lost. Nothing was changed.
	ErrFinished = errors.New("slotstore: slot finished under this claim")
	// ErrOutcomeUnknown reports a mutation whose request may have reached
	// the store but whose reply did not arrive: test for it with errors.Is,
	// and see Failures in the package documentation for what the caller
	// must do. The error also wraps its cause.
	ErrOutcomeUnknown = errors.New("slotstore: outcome unknown")
	// ErrInvalid reports a request the store refused to consider: an empty
	// job, a zero slot, a non-positive lease, an unknown outcome or overlap,
	// an empty skip reason, a retry of a run that succeeded.
	ErrInvalid = errors.New("slotstore: invalid request")
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("slotstore: store closed")
)
