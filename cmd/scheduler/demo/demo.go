// Package demo holds the demo jobs of the reference binary. Each shows one
// part of the job API: hello logs, sleep decodes params and honours
// cancellation, fail returns an error, ledger completes its slot in its own
// Postgres transaction; the duty owner holds until its term ends.
package demo

import (
	"context"
	"errors"
	"time"

	"github.com/slotcron/slotcron/jobs"
)

// Register adds the demo jobs to reg.
func Register(reg *jobs.Registry) {
	reg.Register("hello", Hello)
	reg.Register("sleep", Sleep)
	reg.Register("fail", Fail)
	reg.Register("ledger", new(Ledger).Run)
	reg.RegisterDuty("owner", Owner)
}

// Hello logs the run's identity: job, slot, fence, attempt and replica are
// already attached to run.Logger().
func Hello(ctx context.Context, run jobs.Run) error {
	run.Logger().Info("hello", "key", run.Key())
	return nil
}

// SleepParams are the params of the sleep job.
type SleepParams struct {
	// Duration to sleep; default 5s.
	Duration time.Duration `yaml:"duration"`
}

// Sleep sleeps for params.duration, returning early with the context's
// error if the run is cancelled (timeout, lease lost, shutdown).
func Sleep(ctx context.Context, run jobs.Run) error {
	p := SleepParams{Duration: 5 * time.Second}
	if err := run.Params(&p); err != nil {
		return err
	}
	t := time.NewTimer(p.Duration)
	defer t.Stop()
	select {
	case <-t.C:
		run.Logger().Info("slept", "duration", p.Duration)
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// ErrDemo is what the fail job returns.
var ErrDemo = errors.New("demo: this job always fails")

// Fail always returns ErrDemo, to show a failed outcome in logs and history.
func Fail(ctx context.Context, run jobs.Run) error { return ErrDemo }
