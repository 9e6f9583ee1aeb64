package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/slotstore"
)

// RunParams is what one Run uses beyond the engine's configuration.
type RunParams struct {
	// Store holds the markers; the caller owns it and closes it after Run.
	Store slotstore.Store
	// Elector is what duties campaign with; required when there are duties.
	Elector leader.Elector
	// Serve, when set, starts the admin API; wait returns once it has
	// stopped after ctx ended. An error stops Run before the loop starts.
	Serve func(ctx context.Context) (wait func(), err error)
	// Tracing, when set, traces every run (engine/trace.go); nil traces
	// none.
	Tracing trace.TracerProvider
	// TraceCluster names the cluster in the IDs of run spans
	// (runtrace.RunIDs).
	TraceCluster string
}

// ErrShutdown is the cause of a job context cancelled by shutdown.
var ErrShutdown = errors.New("scheduler: shutting down")

// Run schedules and runs jobs until ctx is cancelled, then shuts down
// gracefully: it stops claiming, lets running jobs finish for up to the
// grace, cancels the rest, releases their slots so another replica takes
// them over at once, and returns nil. It returns when every goroutine it
// started has ended, with one bound: a job (or duty) that ignores its
// cancelled context is waited for at most its lease and 5 s more after the
// grace, then left behind, logged.
func (e *Engine) Run(ctx context.Context, rp RunParams) error {
	st := rp.Store
	e.setTracing(rp.Tracing, rp.TraceCluster)
	// runCtx outlives ctx by the shutdown grace: running jobs see it end.
	runCtx, stopRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRuns(nil)
	var runs sync.WaitGroup
	l := newLoop(e, st, runCtx, &runs)

	// Until the loop runs, a failure to start returns at once: it stops
	// and waits for what was started, before the caller closes the store.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var bg, duties sync.WaitGroup
	running := false
	defer func() {
		if !running {
			stop()
			bg.Wait()
			duties.Wait()
		}
	}()
	bg.Go(func() { e.prune(ctx, st) })
	bg.Go(func() { e.beat(ctx, st) })
	bg.Go(func() { e.followCatalog(ctx, st) })
	bg.Go(func() { e.sweep(ctx, st) })
	if len(e.duties) > 0 {
		if rp.Elector == nil {
			return errors.New("scheduler: duties need an elector")
		}
		for _, d := range e.duties {
			duties.Go(func() { e.lead(ctx, rp.Elector, d) })
		}
	}
	// Live before the API serves, so that no request it answers finds the
	// Run not started.
	e.live.set(l)
	if rp.Serve != nil {
		wait, err := rp.Serve(ctx)
		if err != nil {
			e.live.set(nil)
			l.endStartUp()
			stopRuns(err) // a run triggered meanwhile through the Go API
			runs.Wait()
			return err
		}
		bg.Go(wait)
	}
	running = true
	l.run(ctx)
	e.live.set(nil) // no trigger starts a run from now on
	bg.Wait()

	e.log.Info("shutting down", "running", l.runningNow(), "grace", e.grace)
	done := make(chan struct{})
	go func() { runs.Wait(); close(done) }()
	grace := time.NewTimer(e.grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		stopRuns(ErrShutdown)
		// A job that ignores its cancelled context cannot be stopped; its
		// lease runs out and its successor is protected by the fence. Wait
		// for that long, then exit without it.
		bound := time.NewTimer(e.maxLease() + 5*time.Second)
		defer bound.Stop()
		select {
		case <-done:
		case <-bound.C:
			e.log.Error("jobs ignored cancellation; stopping without them", "running", l.runningNow())
		}
	}
	// Duties were cancelled with ctx and have been handing over while the
	// running jobs had their grace.
	e.waitDuties(&duties)
	e.beatGone(st)
	return nil
}

// prune deletes expired markers of st every few minutes until ctx ends.
func (e *Engine) prune(ctx context.Context, st slotstore.Store) {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := st.Prune(ctx)
			if err != nil && ctx.Err() == nil {
				e.log.Warn("prune failed", "err", err)
			} else if n > 0 {
				e.log.Debug("pruned markers", "count", n)
			}
		}
	}
}

// waitDuties waits for the duties' campaigns to end, at most one duty lease
// and a few seconds: a duty that ignores its cancelled context is left
// behind, as a job would be, and its fence protects its successor.
func (e *Engine) waitDuties(duties *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { duties.Wait(); close(done) }()
	var bound time.Duration
	for _, d := range e.duties {
		bound = max(bound, d.lease)
	}
	t := time.NewTimer(bound + 5*time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		e.log.Error("duties ignored cancellation; stopping without them")
	}
}
