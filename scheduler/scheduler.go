package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotcron/slotcron/internal/fencemetrics"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Scheduler runs the jobs of one replica. Build it with New and start it with
// Run; it is not reusable after Run returns.
type Scheduler struct {
	cfg      *Config
	eng      *engine.Engine
	jobs     int
	duties   int
	replica  string
	log      *slog.Logger // with the replica attached
	store    slotstore.Store
	elector  leader.Elector
	now      func() time.Time
	baseLog  *slog.Logger
	registry *prometheus.Registry
	tracing  trace.TracerProvider // from WithTracerProvider
	// reg is the jobs' registry, which a reload resolves against;
	// runStore the store of the Run in progress (reload.go).
	reg      *jobs.Registry
	runStore atomic.Pointer[slotstore.Store]
	reloads  reloadMetrics
	// guard holds the HTTP API's tokens, re-read on SIGHUP; nil without
	// http.listen.
	guard *admin.Guard
}

// Option configures a Scheduler beyond its Config.
type Option func(*Scheduler)

// WithStore makes the scheduler use s instead of opening the configured
// store: one made with New on a client of the caller's, say. The caller
// keeps ownership: Run does not close it. Duties then campaign with the
// elector of s's kind (see WithElector). New refuses a Redis, Postgres or
// etcd store whose kind the binary does not link, naming the import:
// electing in the slot store instead would elect a second leader beside
// replicas that link the kind.
func WithStore(s slotstore.Store) Option { return func(sc *Scheduler) { sc.store = s } }

// WithElector makes duties campaign with el instead of the elector that
// follows the store in use: the elector of its store kind (on Redis,
// leases beside the store's keys; on Postgres, a session advisory lock on
// a dedicated connection; on etcd, a term key fenced by its revision), or,
// on a store whose kind has none (SQLite, memory), a lease slot in the
// store itself, polled. The caller keeps ownership.
func WithElector(el leader.Elector) Option { return func(sc *Scheduler) { sc.elector = el } }

// WithRegistry registers the scheduler's metrics on r, which /metrics then
// serves, instead of on a registry of its own.
func WithRegistry(r *prometheus.Registry) Option { return func(sc *Scheduler) { sc.registry = r } }

// WithLogger replaces the logger built from Config.Log. The scheduler
// attaches the replica's name to its lines; l need not.
func WithLogger(l *slog.Logger) Option { return func(sc *Scheduler) { sc.baseLog = l } }

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
	rev, _ := cfg.revision() // resolve checked it
	s := &Scheduler{cfg: cfg.kept(), jobs: len(plans), duties: len(duties), replica: cfg.replicaName(), now: time.Now, reg: reg}
	for _, o := range opts {
		o(s)
	}
	if s.store != nil && s.duties > 0 && s.elector == nil {
		if err := backend.CheckLinked(s.store); err != nil {
			return nil, fmt.Errorf("scheduler: %w", err)
		}
	}
	if s.baseLog == nil {
		s.baseLog = newLogger(cfg.Log, os.Stderr)
	}
	s.log = s.baseLog.With("replica", s.replica)
	grace := cfg.ShutdownGrace.D()
	if grace == 0 {
		grace = DefaultShutdownGrace
	}
	private := s.registry == nil
	if private {
		s.registry = prometheus.NewRegistry()
	}
	s.eng, err = engine.New(engine.Config{Replica: s.replica, Incarnation: newIncarnation(), Log: s.baseLog, Now: s.now,
		Grace: grace, Jobs: plans, Duties: duties, PerJobHistograms: cfg.Metrics.PerJobHistograms, ActionsHistory: cfg.actionsRetain(),
		MaxRunning: cfg.MaxRunning,
		Registry:   s.registry, Runtime: private, Revision: rev, Lookup: reg.Lookup})
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if s.reloads, err = newReloadMetrics(s.registry); err != nil {
		return nil, fmt.Errorf("scheduler: register reload metrics: %w", err)
	}
	// Jobs that fence their writes count rejections in the same registry.
	if err := fencemetrics.Register(s.registry); err != nil {
		return nil, fmt.Errorf("scheduler: register fence metrics: %w", err)
	}
	if cfg.HTTP.Listen != "" {
		if s.guard, err = cfg.HTTP.guard(s.registry, s.log); err != nil {
			return nil, fmt.Errorf("scheduler: http tokens: %w", err)
		}
	}
	if len(duties) > 0 {
		if err := leader.Register(s.registry); err != nil {
			return nil, fmt.Errorf("scheduler: register duty metrics: %w", err)
		}
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
	st, kind := s.store, ""
	if st == nil {
		opened, err := backend.OpenWait(ctx, s.cfg.backendConfig(), StoreWait, s.log)
		if err != nil {
			return err
		}
		defer opened.Close()
		st, kind = opened, backend.KindName(s.cfg.Store.Kind)
	} else {
		kind = fmt.Sprintf("%T", st)
	}
	backend.RouteClientLogs(st, s.log)
	s.runStore.Store(&st)
	defer s.runStore.Store(nil)
	// The configuration's revision takes effect on this replica.
	engine.RecordAction(ctx, st, s.log, s.cfg.actionsRetain(), engine.Slotcron, engine.Act{Kind: "config",
		Detail: fmt.Sprintf("replica %s started: revision %q, %d jobs, %d duties", s.replica, s.cfg.Revision, s.jobs, s.duties)})
	tp, stopTracing, err := s.openTracing(ctx)
	if err != nil {
		return err
	}
	defer stopTracing()
	rp := engine.RunParams{Store: st, Elector: s.elector, Tracing: tp, TraceCluster: s.cfg.Tracing.Cluster}
	if s.duties > 0 && rp.Elector == nil {
		el, name, err := s.elect(ctx, st)
		if err != nil {
			return err
		}
		rp.Elector = el
		s.log.Info("duties elect", "with", name)
	}
	if h := s.cfg.HTTP; h.Listen != "" {
		rp.Serve = func(ctx context.Context) (func(), error) {
			return admin.Serve(ctx, s.eng, admin.Options{Listen: h.Listen, Guard: s.guard, Gatherer: s.registry, StoreKind: kind,
				Schedules: scheduleAPI{s.httpSchedules(st)}, TLS: h.tlsFiles()})
		}
	}
	s.log.Info("scheduler started", "jobs", s.jobs, "store", kind)
	if err := s.eng.Run(ctx, rp); err != nil {
		return err
	}
	stopTracing() // its last spans, before the last line
	s.log.Info("scheduler stopped")
	return nil
}

// elect returns the elector duties campaign with on st: the configured
// kind's when Run opened the store, else the one of st's registered kind.
func (s *Scheduler) elect(ctx context.Context, st slotstore.Store) (leader.Elector, string, error) {
	if s.store == nil {
		return backend.KindElector(ctx, s.cfg.Store.Kind, st, s.baseLog)
	}
	return backend.Elector(ctx, st, s.baseLog)
}

// StoreWait is how long Run retries opening a store it cannot reach at
// start-up before it gives up.
const StoreWait = time.Minute

// newIncarnation returns a random name for this process.
func newIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
