package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotcron/slotcron/jobs"
)

// errInterrupted reports a command stopped by SIGINT or SIGTERM before it
// had done its work: exit code 1, as for any command that did not finish.
var errInterrupted = errors.New("interrupted")

// interrupted is errInterrupted saying what was going on, why ctx ended
// (the signal, with Main) and, if not nil, what the step returned.
func interrupted(ctx context.Context, during string, err error) error {
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w %s: %v (%w)", errInterrupted, during, context.Cause(ctx), err)
	}
	return fmt.Errorf("%w %s: %v", errInterrupted, during, context.Cause(ctx))
}

// interruptible runs fn and returns its result, or errInterrupted as soon
// as ctx ends. fn is given ctx and gives up soon after, except in steps that
// cannot stop midway (reading a file that does not end, parsing a big
// document); such a step finishes unheard in the background, and its result
// is dropped. Main exits at once anyway.
func interruptible[T any](ctx context.Context, during string, fn func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if ctx.Err() != nil && r.err != nil && !IsConfigError(r.err) {
			return r.v, interrupted(ctx, during, r.err) // it gave up
		}
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, interrupted(ctx, during, nil)
	}
}

// loadConfig is loadAndValidate, stopped by ctx.
func loadConfig(ctx context.Context, path string, reg *jobs.Registry) (*Config, error) {
	return interruptible(ctx, "while loading "+path, func(ctx context.Context) (*Config, error) {
		return loadAndValidate(ctx, path, reg)
	})
}
