package fence

import (
	"errors"
	"fmt"
)

var (
	// ErrStale reports a write presented with a fence lower than the
	// highest fence the resource has seen: its holder was superseded.
	// Errors wrapping it are *StaleError values; use errors.Is to test
	// and errors.As to read the fences.
	ErrStale = errors.New("fence: stale fence")
	// ErrInvalid reports a request no resource would consider: an empty
	// resource name, a fence that is not positive, a negative TTL.
	ErrInvalid = errors.New("fence: invalid request")
	// ErrNotFound reports a Get of a key that holds no live value: none
	// was ever set, or its TTL has passed.
	ErrNotFound = errors.New("fence: no value")
)

// StaleError is the error of a rejected write: the resource has seen
// Highest, and the writer presented the lower Fence. It wraps ErrStale.
type StaleError struct {
	Resource string
	Fence    int64 // the fence presented
	Highest  int64 // the highest fence the resource had seen
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale fence: resource %q: fence %d is below the highest seen, %d",
		e.Resource, e.Fence, e.Highest)
}

// Unwrap returns ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }

// validate checks what every helper requires of a write.
func validate(resource string, token int64) error {
	if resource == "" {
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	}
	if token <= 0 {
		return fmt.Errorf("%w: resource %q: fence %d is not positive", ErrInvalid, resource, token)
	}
	return nil
}
