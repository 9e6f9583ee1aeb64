package rules

import (
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
)

// OutcomeUnknown wraps cause, the failure of op after its request may have
// reached the store, so that errors.Is finds both
// slotstore.ErrOutcomeUnknown and cause.
func OutcomeUnknown(op string, cause error) error {
	return &unknownError{op: op, cause: cause}
}

type unknownError struct {
	op    string
	cause error
}

func (e *unknownError) Error() string {
	return fmt.Sprintf("slotstore: %s: outcome unknown: %v", e.op, e.cause)
}

func (e *unknownError) Unwrap() []error { return []error{slotstore.ErrOutcomeUnknown, e.cause} }

// invalid is an error wrapping slotstore.ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{slotstore.ErrInvalid}, args...)...)
}
