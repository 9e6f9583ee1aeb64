package fence

import (
	"errors"
	"fmt"

	"github.com/slotcron/slotcron/jobs"
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
	// ErrApplied reports a once-per-slot write (PG.Once, Redis.SetOnce,
	// Memory.SetOnce) refused because the slot's effect was already
	// committed: by an earlier attempt whose holder died before the slot
	// was recorded finished, by a newer holder, or by this very run (a
	// retry whose first try committed). The effect exists, so a job that
	// gets it returns nil. Errors wrapping it are *AppliedError values.
	ErrApplied = errors.New("fence: effect already applied")
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

// AppliedError is the error of a refused once-per-slot write: the effect
// of run Key on Resource was already committed with fence Applied, and the
// writer presented Fence. It wraps ErrApplied. When Applied is above Fence
// a newer holder committed the effect and the writer was superseded: the
// error then wraps a *StaleError as well, so errors.Is(err, ErrStale) holds
// too and errors.As gives the fences either way.
type AppliedError struct {
	// Resource is what the record belongs to: the run key for PG.Once,
	// the key for Redis.SetOnce and Memory.SetOnce.
	Resource string
	Key      string // the run key, job@slot
	Fence    int64  // the fence presented
	Applied  int64  // the fence the effect was committed with; 0 if unknown
}

func (e *AppliedError) Error() string {
	return fmt.Sprintf("fence: effect already applied: resource %q, run %s: committed with fence %d, presented %d",
		e.Resource, e.Key, e.Applied, e.Fence)
}

// Unwrap returns ErrApplied and, when a newer holder committed the effect,
// the *StaleError of the writer.
func (e *AppliedError) Unwrap() []error {
	if e.stale() {
		return []error{ErrApplied, &StaleError{Resource: e.Resource, Fence: e.Fence, Highest: e.Applied}}
	}
	return []error{ErrApplied}
}

func (e *AppliedError) stale() bool { return e.Fence < e.Applied }

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

// validateRun checks what every once-per-slot helper requires of a run.
func validateRun(run jobs.Run) error {
	if run.Job == "" {
		return fmt.Errorf("%w: run with an empty job name", ErrInvalid)
	}
	if run.Slot.IsZero() {
		return fmt.Errorf("%w: job %q: run with a zero slot", ErrInvalid, run.Job)
	}
	if run.Fence <= 0 {
		return fmt.Errorf("%w: run %s: fence %d is not positive", ErrInvalid, run.Key(), run.Fence)
	}
	return nil
}
