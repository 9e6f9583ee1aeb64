package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/slotcron/slotcron/internal/lease"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// ErrTimeout is the cause of a job context ended by the job's timeout.
var ErrTimeout = errors.New("scheduler: job timeout")

// ErrReplaced is the cause of a job context cancelled because a later slot
// of the job replaced it (overlap: replace).
var ErrReplaced = errors.New("scheduler: replaced by a later slot")

// runHooks are what the loop wants to hear from a run; nil fields are
// ignored.
type runHooks struct {
	// retryAt is told when a failed run's slot is due again.
	retryAt func(p *plan, slot, at time.Time)
}

// execute runs one won claim to its end: it keeps the lease, calls the job
// when b says (a claim made ahead of its slot waits for the slot's
// instant), and records the outcome (or the retry it earned), or releases
// the slot on shutdown; o marks its lines. ctx is the run's own context and
// cancel its cancel function, which the loop may call too (a replaced
// run). A replica whose lease was lost records nothing: the slot belongs to
// its successor.
func (s *Engine) execute(ctx context.Context, cancel context.CancelCauseFunc, st slotstore.Store, p *plan,
	c slotstore.Claim, o origin, sent time.Time, b begin, hooks runHooks) End {
	defer cancel(nil)
	ctx, span := s.traceRun(ctx, p, c, sent)
	run := jobs.Run{Job: p.name, Slot: c.Slot, Fence: c.Fence, Attempt: c.Attempt, Replica: s.replica}.
		WithParams(p.params).WithLogger(s.base).WithStore(st)
	// The run's logger is built on its first line: most runs write one.
	rl := &runLease{s: s, st: st, p: p, ref: c.Ref, cancel: cancel, log: runLogger{base: s.base, run: run}, span: span}
	x := execution{s: s, st: st, p: p, c: c, log: &rl.log, span: span, lease: rl, origin: o}
	x.noteTakeover()

	keeper := rl.keep(sent)
	defer keeper.Stop()
	res, began := x.await(ctx, b), false
	if res.err == nil && !b.at.IsZero() && !keeper.Trusted() {
		// Its trust ended as it waited, before the keeper said so: the
		// run ends as a lost lease (cutShort), whatever a late renewal
		// says, and the slot is left to the successor the fence admits.
		rl.report(slog.LevelWarn, "trust ended as the run waited for its instant; the job was not called")
		res.err = ErrLeaseLost
	}
	if res.err == nil {
		res, began = x.call(ctx, run), true
	}
	keeper.Pause()
	end, over := x.cutShort(ctx, keeper, res)
	if !over && !began {
		// Its context ended as it waited, for no reason of the above.
		over, end = true, x.release(res)
	}
	if !over {
		end = x.record(keeper, res, hooks)
	}
	s.metrics.run(p, end).Inc()
	span.end(end, res.err)
	return end
}

// execution is one run of a won claim, as execute carries it out.
type execution struct {
	s   *Engine
	st  slotstore.Store
	p   *plan
	c   slotstore.Claim
	log *runLogger

	// span is the run's span, which traces it.
	span runSpan
	// lease is the run's claim as its keeper holds it.
	lease *runLease
	// origin is what started the run.
	origin origin
}

// jobResult is what calling the job came to.
type jobResult struct {
	err      error
	dur      time.Duration
	timedOut bool // the job's timeout ended its context
}

// noteTakeover logs and counts a claim that took the slot over from a
// holder whose lease ran out; a retry's claim is logged only.
func (x *execution) noteTakeover() {
	if !x.c.Takeover() {
		return
	}
	x.log.get().Info("takeover", "prev_holder", x.c.PrevHolder, "retry", x.c.Retry)
	if !x.c.Retry {
		x.s.metrics.takeover(x.p).Inc()
	}
}

// begin is when a won claim's run starts: at once (the zero begin), or,
// for a claim made ahead of its slot, at the slot's instant. A replica
// that stops meanwhile still starts it then, in the shutdown's grace, as
// it lets a run already going finish: releasing it unstarted would leave a
// released marker that no window binds, which a rolling deploy's new spec
// then supersedes, so the slot ran nowhere.
type begin struct {
	at time.Time
	// gate, when not nil, opens at at (gates.go); should it open sooner
	// (shared with a run of the same wall instant), await waits the rest.
	gate <-chan struct{}
}

// await waits until b.at, on its gate when it has one, and returns a
// result with an error when the run's context ends first (a lost lease,
// the grace's end: its cause): the job is never called.
func (x *execution) await(ctx context.Context, b begin) jobResult {
	if b.at.IsZero() {
		return jobResult{}
	}
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return jobResult{err: context.Cause(ctx)}
	}
	wait := time.Until(b.at)
	if wait <= 0 {
		return jobResult{}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return jobResult{}
	case <-ctx.Done():
		return jobResult{err: context.Cause(ctx)}
	}
}

// call calls the job under its timeout, recording the dispatch delay (its
// start less its nominal slot) and its duration.
func (x *execution) call(ctx context.Context, run jobs.Run) jobResult {
	m := x.s.metrics
	tctx, cancelTimeout := context.WithTimeoutCause(ctx, x.p.timeout, ErrTimeout)
	defer cancelTimeout()
	start := time.Now()
	delay := x.s.now().Sub(x.c.Slot)
	m.delay(x.p).Observe(delay.Seconds())
	x.log.line(slog.LevelInfo, "run started", x.origin.attrs(slog.Duration("delay", delay.Round(time.Millisecond)))...)
	err := call(tctx, x.p.fn, run, x.log)
	dur := time.Since(start)
	m.duration(x.p).Observe(dur.Seconds())
	return jobResult{err: err, dur: dur, timedOut: errors.Is(context.Cause(tctx), ErrTimeout)}
}

// cutShort ends a run whose outcome is not this run's to record, and
// reports whether it did: a later slot replaced it, the job's own
// transaction recorded it, the lease was lost, or shutdown cancelled the
// job, whose slot is released for another replica to take over at once.
func (x *execution) cutShort(ctx context.Context, keeper *lease.Keeper, res jobResult) (End, bool) {
	log := x.log
	switch {
	case errors.Is(context.Cause(ctx), ErrReplaced):
		log.get().Info("run replaced; outcome not recorded", "duration", res.dur, "err", errString(res.err))
		return EndReplaced, true
	case keeper.Ended():
		// A renewal found the slot done under this claim's fence: the job
		// completed it in its own transaction (CompleteTx), which recorded
		// the outcome; there is nothing left to record, and nothing to retry.
		attrs := []any{"outcome", slotstore.Succeeded, "duration", res.dur, "recorded_by", "the job's transaction"}
		if res.err != nil {
			attrs = append(attrs, "err", res.err.Error())
		}
		log.get().Info("run finished", attrs...)
		x.s.metrics.succeeded(x.p, x.c.Slot)
		return EndSucceeded, true
	case !keeper.Trusted() || errors.Is(context.Cause(ctx), ErrLeaseLost):
		x.lease.lostUnnoticed() // a no-op when the keeper reported it
		log.get().Warn("run ended after lease lost; outcome not recorded", "duration", res.dur, "err", errString(res.err))
		return EndLeaseLost, true
	case res.err != nil && errors.Is(context.Cause(ctx), ErrShutdown):
		return x.release(res), true
	}
	return "", false
}

// release ends the claim without an outcome, for another replica to take
// the slot over at once.
func (x *execution) release(res jobResult) End {
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if rerr := x.st.Release(rctx, x.c.Ref); rerr != nil {
		x.log.get().Warn("release failed; the slot is taken over when its lease ends", "err", rerr)
		return EndLeaseLost
	}
	x.log.get().Info("run released", "duration", res.dur, "err", errString(res.err))
	return EndReleased
}

// record records the run's outcome, or the retry it earned, and logs it;
// a retry is told to the loop through hooks.
func (x *execution) record(keeper *lease.Keeper, res jobResult, hooks runHooks) End {
	outcome := slotstore.Succeeded
	switch {
	case res.err != nil && res.timedOut:
		outcome = slotstore.TimedOut
	case res.err != nil:
		outcome = slotstore.Failed
	}
	fp := slotstore.FinishParams{Ref: x.c.Ref, Outcome: outcome, Error: errString(res.err), Duration: res.dur}
	if outcome != slotstore.Succeeded {
		fp.RetryAt, _ = x.p.retryAt(x.c.Slot, x.c.Attempt, x.s.now())
	}
	if !x.span.finish(outcome, func() bool { return x.s.finish(x.st, keeper, fp, x.lease) }) {
		return EndLeaseLost
	}
	attrs := func(more ...any) []any {
		a := append([]any{"outcome", outcome, "duration", res.dur}, more...)
		if res.err != nil {
			a = append(a, "err", res.err.Error())
		}
		return a
	}
	log := x.log.get
	switch {
	case !fp.RetryAt.IsZero():
		log().Warn("run failed; retry scheduled", attrs("retry_at", fp.RetryAt.UTC().Format(time.RFC3339Nano))...)
		if hooks.retryAt != nil {
			hooks.retryAt(x.p, x.c.Slot, fp.RetryAt)
		}
		return EndRetrying
	case outcome == slotstore.Succeeded:
		x.log.line(slog.LevelInfo, "run finished", slog.String("outcome", string(outcome)), slog.Duration("duration", res.dur))
		x.s.metrics.succeeded(x.p, x.c.Slot)
	case x.p.retries.Max > 0:
		// Its retries are spent, or its window closed: the slot is final.
		log().Error("run finished", attrs("retries", "exhausted")...)
	default:
		// No retry is due: the slot is final, failed.
		log().Error("run finished", attrs()...)
	}
	if outcome != slotstore.Succeeded {
		x.s.pauseAfterFailure(failedSlot{st: x.st, p: x.p, slot: x.c.Slot, err: errString(res.err), log: x.log})
	}
	return End(outcome)
}

// retryAt is when a failed attempt of slot is tried again, if it may be:
// while attempts ≤ retries.max, after a backoff doubling from
// retries.backoff up to retries.max_backoff, and never past the slot's
// starting deadline nor at or after the job's next slot.
func (p *plan) retryAt(slot time.Time, attempt int, now time.Time) (time.Time, bool) {
	r := p.retries
	if r.Max <= 0 || attempt > r.Max {
		return time.Time{}, false
	}
	wait := r.Backoff << min(attempt-1, 20)
	if r.MaxBackoff > 0 {
		wait = min(wait, r.MaxBackoff)
	}
	at := now.Add(wait)
	if at.After(p.retryUntil(slot)) {
		return time.Time{}, false
	}
	return at, true
}

// retryUntil is the last instant a retry of slot may start: its starting
// deadline, or a second before the job's next slot if that comes first.
func (p *plan) retryUntil(slot time.Time) time.Time {
	limit := slot.Add(p.deadline)
	if next := p.sched.Next(slot); !next.IsZero() && !next.After(limit) {
		limit = next.Add(-time.Second)
	}
	return limit
}

// finish records the outcome, retrying store errors for as long as the lease
// is trusted (renewals are paused; the trust window still runs). It reports whether the
// outcome was recorded.
func (s *Engine) finish(st slotstore.Store, k *lease.Keeper, p slotstore.FinishParams, rl *runLease) bool {
	log := &rl.log
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithDeadline(context.Background(), k.TrustedUntil())
		err := st.Finish(ctx, p)
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, slotstore.ErrLeaseLost):
			rl.refused(p.Outcome)
			return false
		}
		log.get().Warn("recording the outcome failed", "err", err, "try", tries)
		select {
		case <-k.Lost():
			return false
		case <-time.After(backoff(tries)):
		}
	}
}

// call runs fn, turning a panic into an error so one bad job cannot take
// the replica down.
func call(ctx context.Context, fn jobs.Func, run jobs.Run, log *runLogger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.get().Error("job panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx, run)
}

// runLogger is a run's logger, with the run's attributes, built on first
// use: a slot costs no logger unless it writes a line. Safe for concurrent
// use (the lease's callbacks log from their own goroutines).
type runLogger struct {
	base *slog.Logger
	run  jobs.Run
	once sync.Once
	l    *slog.Logger
}

func (r *runLogger) get() *slog.Logger {
	r.once.Do(func() { r.l = r.base.With(r.run.Attrs()...) })
	return r.l
}

// line writes msg at level with the run's attributes and attrs, as get's
// logger would, without building that logger: the lines every run writes
// (started, finished) cost a slice of attributes each and no more.
func (r *runLogger) line(level slog.Level, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if !r.base.Enabled(ctx, level) {
		return
	}
	// On the stack: a line's attributes cost the Record's copy alone. The
	// buffer holds the run's attributes, whatever their number, and three
	// of the line's (more go to the heap).
	run := r.run.LogAttrs()
	var buf [len(run) + 3]slog.Attr
	n := copy(buf[:], run[:])
	r.base.LogAttrs(ctx, level, msg, append(buf[:n], attrs...)...)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
