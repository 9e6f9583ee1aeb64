package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// errTimeout is the cause of a job context ended by the job's timeout.
var errTimeout = errors.New("scheduler: job timeout")

// execute runs one won claim to its end: it keeps the lease, calls the job,
// and records the outcome, or releases the slot on shutdown. A replica whose
// lease was lost records nothing: the slot belongs to its successor.
func (s *Scheduler) execute(runCtx context.Context, p *plan, c slotstore.Claim, sent time.Time) {
	run := jobs.Run{Job: p.name, Slot: c.Slot, Fence: c.Fence, Attempt: c.Attempt, Replica: s.replica}.
		WithParams(p.params).WithLogger(s.log)
	log := s.log.With(run.Attrs()...)
	m := s.metrics
	if c.Takeover() {
		log.Info("takeover", "prev_holder", c.PrevHolder)
		m.takeovers.WithLabelValues(p.name).Inc()
	}

	ctx, cancel := context.WithCancelCause(runCtx)
	defer cancel(nil)
	keeper := startLeaseKeeper(s.store, c.Ref, p.lease, p.timeout, sent, cancel, log)
	keeper.renewed = m.renewLatency.WithLabelValues(p.name).Observe
	keeper.lostHook = m.leasesLost.WithLabelValues(p.name).Inc
	defer keeper.stop()

	tctx, cancelTimeout := context.WithTimeoutCause(ctx, p.timeout, errTimeout)
	start := time.Now()
	delay := s.now().Sub(c.Slot)
	m.dispatchDelay.WithLabelValues(p.name).Observe(delay.Seconds())
	log.Info("run started", "delay", delay.Round(time.Millisecond))
	err := call(tctx, p.fn, run, log)
	dur := time.Since(start)
	m.runDuration.WithLabelValues(p.name).Observe(dur.Seconds())
	timedOut := errors.Is(context.Cause(tctx), errTimeout)
	cancelTimeout()

	keeper.pause()
	if !keeper.trusted() {
		log.Warn("run ended after lease lost; outcome not recorded", "duration", dur, "err", errString(err))
		m.runs.WithLabelValues(p.name, "lease_lost").Inc()
		return
	}
	if err != nil && errors.Is(context.Cause(ctx), errShutdown) {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		if rerr := s.store.Release(rctx, c.Ref); rerr != nil {
			log.Warn("release failed; the slot is taken over when its lease ends", "err", rerr)
			return
		}
		log.Info("run released", "duration", dur, "err", errString(err))
		m.runs.WithLabelValues(p.name, "released").Inc()
		return
	}

	outcome := slotstore.Succeeded
	switch {
	case err != nil && timedOut:
		outcome = slotstore.TimedOut
	case err != nil:
		outcome = slotstore.Failed
	}
	if s.finish(keeper, slotstore.FinishParams{Ref: c.Ref, Outcome: outcome, Error: errString(err), Duration: dur}, log) {
		attrs := []any{"outcome", outcome, "duration", dur}
		if err != nil {
			attrs = append(attrs, "err", err.Error())
		}
		log.Info("run finished", attrs...)
		m.runs.WithLabelValues(p.name, string(outcome)).Inc()
		if outcome == slotstore.Succeeded {
			m.lastSuccess.WithLabelValues(p.name).Set(seconds(c.Slot))
		}
	}
}

// finish records the outcome, retrying store errors for as long as the lease
// is trusted (the keeper keeps renewing meanwhile). It reports whether the
// outcome was recorded.
func (s *Scheduler) finish(k *leaseKeeper, p slotstore.FinishParams, log *slog.Logger) bool {
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithDeadline(context.Background(), k.trustedUntil())
		err := s.store.Finish(ctx, p)
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, slotstore.ErrLeaseLost):
			log.Warn("lease lost", "reason", "the store refused the outcome: another claim holds the slot", "outcome", p.Outcome)
			return false
		}
		log.Warn("recording the outcome failed", "err", err, "try", tries)
		select {
		case <-k.lost():
			return false
		case <-time.After(backoff(tries)):
		}
	}
}

// call runs fn, turning a panic into an error so one bad job cannot take
// the replica down.
func call(ctx context.Context, fn jobs.Func, run jobs.Run, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("job panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx, run)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
