package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// revision reads the revision key: a whole number of at least 1, or an RFC
// 3339 time as its Unix seconds; 0 when it is not set.
func (c *Config) revision() (int64, error) {
	r := strings.TrimSpace(c.Revision)
	if r == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(r, 10, 64); err == nil {
		if n < 1 {
			return 0, fmt.Errorf("revision %d: want a whole number of at least 1, or an RFC 3339 time", n)
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, r)
	if err != nil || t.Unix() < 1 {
		return 0, fmt.Errorf("revision %q: want a whole number (a build number) or an RFC 3339 time (2026-12-06T07:00:00Z)", r)
	}
	return t.Unix(), nil
}

// reloadMetrics are what /metrics says of reloads.
type reloadMetrics struct {
	ok, at prometheus.Gauge
}

func newReloadMetrics(r prometheus.Registerer) (reloadMetrics, error) {
	m := reloadMetrics{
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "slotcron", Name: "config_last_reload_successful",
			Help: "1 when the last reload of the configuration (SIGHUP) was applied, or none was asked; 0 when it failed (the file did not validate, or the store could not be reached), and the configuration before it is still in force."}),
		at: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "slotcron", Name: "config_last_reload_success_timestamp_seconds",
			Help: "When the configuration in force was applied (start-up or the last successful reload), in Unix seconds."}),
	}
	m.ok.Set(1)
	m.at.SetToCurrentTime()
	for _, c := range []prometheus.Collector{m.ok, m.at} {
		if err := r.Register(c); err != nil {
			return m, err
		}
	}
	return m, nil
}

// errNotReloaded is wrapped by Reload's error when nothing of the new
// configuration was applied.
var errNotReloaded = errors.New("configuration not reloaded")

// Reload applies cfg's jobs to the scheduler while Run goes on: jobs it adds
// are enrolled and scheduled, jobs it removes take no new slot (a running
// one finishes), jobs whose spec it changes take their slots under the new
// spec from their next slot on. A cfg that does not validate changes
// nothing and is returned as ConfigErrors. Settings other than the jobs and
// the revision (store, http, log, duties, tracing, replica, defaults' effect
// aside) need a restart: Reload applies the jobs and names what it left in
// the error it returns beside a successful reload, never half of a job.
func (s *Scheduler) Reload(ctx context.Context, cfg *Config) (engine.Reloaded, error) {
	r, err := s.reload(ctx, cfg)
	if err != nil && !errors.Is(err, errNeedsRestart) {
		s.reloads.ok.Set(0)
		return r, err
	}
	s.reloads.ok.Set(1)
	s.reloads.at.SetToCurrentTime()
	return r, err
}

// errNeedsRestart is wrapped by Reload's error for settings it did not apply.
var errNeedsRestart = errors.New("needs a restart to take effect")

func (s *Scheduler) reload(ctx context.Context, cfg *Config) (engine.Reloaded, error) {
	plans, _, err := cfg.resolve(s.reg)
	if err != nil {
		return engine.Reloaded{}, err
	}
	rev, _ := cfg.revision() // resolve checked it
	var st slotstore.Store
	if p := s.runStore.Load(); p != nil {
		st = *p
	}
	r, err := s.eng.Reload(ctx, st, plans, rev)
	if st != nil {
		engine.RecordAction(ctx, st, s.log, cfg.actionsRetain(), engine.Slotcron, engine.Act{Kind: "config", Err: err,
			Detail: fmt.Sprintf("replica %s reloaded: revision %q, %d jobs added, %d removed, %d changed", s.replica,
				cfg.Revision, len(r.Added), len(r.Removed), len(r.Changed))})
	}
	if err != nil {
		return r, fmt.Errorf("%w: %w", errNotReloaded, err)
	}
	s.log.Info("configuration reloaded", "added", r.Added, "removed", r.Removed, "changed", r.Changed, "revision", cfg.Revision)
	var left []string
	for _, d := range []struct {
		key      string
		old, new any
	}{
		{"replica", s.cfg.Replica, cfg.Replica}, {"store", s.cfg.Store, cfg.Store}, {"http", s.cfg.HTTP, cfg.HTTP},
		{"log", s.cfg.Log, cfg.Log}, {"metrics", s.cfg.Metrics, cfg.Metrics}, {"tracing", s.cfg.Tracing, cfg.Tracing},
		{"shutdown_grace", s.cfg.ShutdownGrace, cfg.ShutdownGrace}, {"duties", s.cfg.Duties, cfg.Duties},
		{"max_running", s.cfg.MaxRunning, cfg.MaxRunning},
	} {
		if !reflect.DeepEqual(d.old, d.new) {
			left = append(left, d.key)
		}
	}
	if len(left) > 0 {
		s.log.Warn("configuration reloaded but for settings that need a restart", "keys", left)
		return r, fmt.Errorf("%s: %w", strings.Join(left, ", "), errNeedsRestart)
	}
	return r, nil
}

// reloadOnHangup reloads the file at path on every SIGHUP until ctx ends or
// the returned stop is called, logging what each reload did.
func (s *Scheduler) reloadOnHangup(ctx context.Context, path string) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				s.reloadFile(ctx, path)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// reloadFile re-reads the HTTP API's token files, then loads, validates and
// applies the file at path.
func (s *Scheduler) reloadFile(ctx context.Context, path string) {
	if s.guard != nil {
		s.guard.Reload() // a rotation applies even when the file is refused
	}
	s.log.Info("reloading the configuration", "file", path)
	cfg, err := loadAndValidate(ctx, path, s.reg)
	if err == nil {
		_, err = s.Reload(ctx, cfg)
		if errors.Is(err, errNeedsRestart) {
			return // applied, and logged
		}
	} else {
		s.reloads.ok.Set(0)
	}
	var errs ConfigErrors
	if errors.As(err, &errs) {
		for _, e := range errs {
			s.log.Error("reload refused: bad configuration", "file", e.File, "line", e.Line, "key", e.Key, "error", e.Msg)
		}
		return
	}
	if err != nil {
		s.log.Error("reload failed; the configuration before it is still in force", "err", err)
	}
}
