package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// Scheduler runs the jobs of one replica. Build it with New and start it with
// Run; it is not reusable after Run returns.
type Scheduler struct {
	cfg     *Config
	reg     *jobs.Registry
	plans   []*plan
	byName  map[string]*plan // plans by job name
	duties  []*dutyPlan
	replica string
	// incarnation tells this process from others started with the same
	// replica name; markers keep it, so a lost claim reply is adopted only
	// by the process that made the claim.
	incarnation string
	log         *slog.Logger
	// store is the store in use: the one WithStore gave, or the one Run
	// opened, while it runs. Run writes it, and the engine's goroutines
	// read it; Trigger reads it only under live's lock.
	store     slotstore.Store
	ownsStore bool
	// live is the engine of a Run in progress, which Trigger goes through.
	live     *liveEngine
	now      func() time.Time
	grace    time.Duration
	metrics  *metrics
	registry *prometheus.Registry
}

// Option configures a Scheduler beyond its Config.
type Option func(*Scheduler)

// WithStore makes the scheduler use s instead of opening the configured
// store. The caller keeps ownership: Run does not close it.
func WithStore(s slotstore.Store) Option {
	return func(sc *Scheduler) { sc.store, sc.ownsStore = s, false }
}

// WithRegistry registers the scheduler's metrics on r, which /metrics then
// serves, instead of on a registry of its own.
func WithRegistry(r *prometheus.Registry) Option { return func(sc *Scheduler) { sc.registry = r } }

// WithLogger replaces the logger built from Config.Log.
func WithLogger(l *slog.Logger) Option { return func(sc *Scheduler) { sc.log = l } }

// WithClock replaces time.Now as the source of the current time; only the
// decision of when to try a slot depends on it, never which slot it is.
func WithClock(now func() time.Time) Option { return func(sc *Scheduler) { sc.now = now } }

// New validates cfg against reg and returns a scheduler ready to Run. A bad
// configuration is reported as ConfigErrors naming file, line and key.
func New(cfg *Config, reg *jobs.Registry, opts ...Option) (*Scheduler, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if reg == nil {
		return nil, errors.New("scheduler: nil registry")
	}
	plans, duties, err := cfg.resolve(reg)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, reg: reg, plans: plans, duties: duties, replica: cfg.replicaName(), now: time.Now, grace: cfg.ShutdownGrace.D(),
		live:        &liveEngine{},
		incarnation: newIncarnation()}
	if s.grace == 0 {
		s.grace = DefaultShutdownGrace
	}
	s.byName = make(map[string]*plan, len(plans))
	for _, p := range plans {
		s.byName[p.name] = p
	}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = newLogger(cfg.Log, os.Stderr)
	}
	s.metrics = newMetrics(cfg.Metrics)
	private := s.registry == nil
	if private {
		s.registry = prometheus.NewRegistry()
	}
	if err := s.metrics.register(s.registry, private); err != nil {
		return nil, fmt.Errorf("scheduler: register metrics: %w", err)
	}
	// Jobs that fence their writes count rejections in the same registry.
	if err := fence.Register(s.registry); err != nil {
		return nil, fmt.Errorf("scheduler: register fence metrics: %w", err)
	}
	return s, nil
}

// Replica returns the name this replica uses in markers and logs.
func (s *Scheduler) Replica() string { return s.replica }

// Run schedules and runs jobs until ctx is cancelled, then shuts down
// gracefully: it stops claiming, lets running jobs finish for up to
// shutdown_grace, cancels the rest, releases their slots so another replica
// takes them over at once, and returns nil. It returns when every goroutine
// it started has ended, with one bound: a job (or duty) that ignores its
// cancelled context is waited for at most its lease and 5 s more after the
// grace, then left behind, logged, its lease running out and its fence
// guarding its successor. When such a job returns at last, its run's
// attempt to record the outcome fails if Run closed the store. A store
// that cannot be opened is retried for up to StoreWait (a replica restarted
// while its store restarts too waits for it); after that it is an error.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.store == nil {
		st, err := s.openStore(ctx)
		if err != nil {
			return err
		}
		s.live.mu.Lock()
		s.store, s.ownsStore = st, true
		s.live.mu.Unlock()
		defer func() {
			// Closed, and forgotten: a later Run or Trigger opens its own.
			s.live.mu.Lock()
			s.store, s.ownsStore = nil, false
			s.live.mu.Unlock()
			st.Close()
		}()
	}
	kind := storeKind(s.cfg.Store.Kind)
	if !s.ownsStore {
		kind = fmt.Sprintf("%T", s.store)
	}
	s.log.Info("scheduler started", "replica", s.replica, "jobs", len(s.plans), "store", kind)

	// runCtx outlives ctx by the shutdown grace: running jobs see it end.
	runCtx, stopRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRuns(nil)
	var runs sync.WaitGroup
	l := newLoop(s, runCtx, &runs)

	// Until the loop runs, a failure to start returns at once: it stops
	// and waits for what was started, before the store is closed.
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
	st := s.store
	bg.Go(func() { s.prune(ctx, st) })
	if len(s.duties) > 0 {
		el, closeEl, err := s.elector(ctx)
		if err != nil {
			return err
		}
		defer closeEl()
		for _, d := range s.duties {
			duties.Go(func() { s.lead(ctx, el, d) })
		}
	}
	if s.cfg.HTTP.Listen != "" {
		wait, err := s.serveHTTP(ctx, s.cfg.HTTP.Listen, s.registry, l)
		if err != nil {
			return err
		}
		bg.Go(wait)
	}
	running = true
	s.live.set(l)
	l.run(ctx)
	s.live.set(nil) // no trigger starts a run from now on
	bg.Wait()

	s.log.Info("shutting down", "replica", s.replica, "running", l.runningNow(), "grace", s.grace)
	done := make(chan struct{})
	go func() { runs.Wait(); close(done) }()
	grace := time.NewTimer(s.grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		stopRuns(errShutdown)
		// A job that ignores its cancelled context cannot be stopped; its
		// lease runs out and its successor is protected by the fence. Wait
		// for that long, then exit without it.
		bound := time.NewTimer(s.maxLease() + 5*time.Second)
		defer bound.Stop()
		select {
		case <-done:
		case <-bound.C:
			s.log.Error("jobs ignored cancellation; stopping without them", "replica", s.replica, "running", l.runningNow())
		}
	}
	// Duties were cancelled with ctx and have been handing over while the
	// running jobs had their grace.
	s.waitDuties(&duties)
	s.log.Info("scheduler stopped", "replica", s.replica)
	return nil
}

// errShutdown is the cause of a job context cancelled by shutdown.
var errShutdown = errors.New("scheduler: shutting down")

// prune deletes expired markers of st every few minutes until ctx ends.
func (s *Scheduler) prune(ctx context.Context, st slotstore.Store) {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := st.Prune(ctx)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("prune failed", "err", err)
			} else if n > 0 {
				s.log.Debug("pruned markers", "count", n)
			}
		}
	}
}

// waitDuties waits for the duties' campaigns to end, at most one duty lease
// and a few seconds: a duty that ignores its cancelled context is left
// behind, as a job would be, and its fence protects its successor.
func (s *Scheduler) waitDuties(duties *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { duties.Wait(); close(done) }()
	var bound time.Duration
	for _, d := range s.duties {
		bound = max(bound, d.lease)
	}
	t := time.NewTimer(bound + 5*time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Error("duties ignored cancellation; stopping without them", "replica", s.replica)
	}
}

// maxLease is the longest lease of any job.
func (s *Scheduler) maxLease() time.Duration {
	var d time.Duration
	for _, p := range s.plans {
		d = max(d, p.lease)
	}
	return d
}

// newIncarnation returns a random name for this process.
func newIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func storeKind(k string) string {
	if k == "" {
		return "sqlite"
	}
	return k
}

func (p *plan) String() string { return fmt.Sprintf("%s (%s)", p.name, p.sched) }
