// Package admin serves a replica's HTTP endpoints: /metrics, /healthz,
// /readyz, the JSON API under /api/ and the dashboard at /. It talks to the
// engine through the Engine interface only.
//
// Each route needs a role of its caller's bearer token (Guard): the reads
// reader when read_auth is on (else none), a job's trigger, backfill, pause
// and resume operator, the cluster's pause and the schedules' writes admin;
// /healthz, /readyz and the static page are open, /metrics unless
// open_metrics is off. Failed authentications are logged, counted and
// limited per client address. Every read of the store is
// bounded: the jobs list pages, each job's status reads a fixed number of
// its newest markers with bounded concurrency, a filtered history scan
// stops after a fixed number of markers and says so, every request's reads
// have a deadline, and the API's requests together have at most maxReads
// reads in flight (a probe of /readyz goes around them). The store's
// health (/readyz, the cluster view) is one small read, of the pauses.
// Every error body, an unmatched path's under /api/ too, is
// {"error": "<for people>", "code": "<stable>"}.
//
// The dashboard is one static page (dashboard.html, with dashboard.css and
// dashboard.js inlined) that reads the JSON API and re-renders in place; it
// loads nothing from elsewhere and builds its DOM from text, never from
// markup, so names, errors and reasons are shown as they are.
package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// Engine is what the admin API needs of the engine.
type Engine interface {
	Replica() string
	Now() time.Time
	Log() *slog.Logger
	// Jobs describes every job of the configuration; Job one job or
	// schedule held as data this replica runs, false when it runs none of
	// that name.
	Jobs() []engine.JobSpec
	Job(name string) (engine.JobSpec, bool)
	// Records is the store of the Run in progress, false when none: the
	// API reads and changes the store only through it.
	Records() (engine.Records, bool)
	// StoreCall records whether a call to the store succeeded.
	StoreCall(err error)
	// Start claims a manual slot of job and starts its run.
	Start(ctx context.Context, job string) (engine.Started, error)
	// Duties describes every duty as this replica sees it.
	Duties() []engine.DutyStatus
	// Build describes the binary; Started is when the engine was built.
	Build() buildinfo.Info
	Started() time.Time
	// StartBackfill plans a backfill of job and, unless p.DryRun, starts
	// running its slots on the Run in progress.
	StartBackfill(ctx context.Context, job string, p engine.BackfillParams) (engine.BackfillResult, error)
}

// Options configure the server.
type Options struct {
	// Listen is the address to listen on, host:port.
	Listen string
	// Guard decides who may call what; nil is a guard with Token alone,
	// an admin token named "token", reads and /metrics open.
	Guard *Guard
	// Token is the bearer token of the guard built when Guard is nil;
	// empty refuses every mutation.
	Token string
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// StoreKind names the store for the cluster view ("sqlite", "redis"...);
	// empty means the name of the store's Go package.
	StoreKind string
	// Schedules serves /api/schedules; nil answers 503 there.
	Schedules Schedules
	// TLS, when set, serves HTTPS only (tls.go).
	TLS *TLSFiles
}

// Serve listens on o.Listen and serves until ctx ends; wait returns once
// the server has stopped. A listen error is returned at once.
func Serve(ctx context.Context, e Engine, o Options) (wait func(), err error) {
	var tc *tls.Config
	if o.TLS != nil {
		c, err := newCerts(*o.TLS, e.Log())
		if err != nil {
			return nil, err
		}
		tc = c.config()
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("http: listen %s: %w", o.Listen, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	g := guardOf(e, o)
	srv := &http.Server{Handler: handler(e, o, g), ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: maxHeader}
	done := make(chan struct{})
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		g.watch(wctx, tokenPoll)
	}()
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.Log().Error("http server failed", "err", err)
		}
	}()
	e.Log().Info("http listening", "addr", ln.Addr().String(), "tls", tc != nil, "read_auth", g.readAuth, "open_metrics", g.openMetrics)
	if g.readAuth && !g.configured() {
		e.Log().Warn("http reads need a token (http.read_auth) and none is configured: the API and the dashboard refuse every read")
	}
	return func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
		stopWatch()
		<-watched
	}, nil
}

// tokenPoll is how often Serve re-reads the token files, to see a
// rotation without a SIGHUP.
const tokenPoll = 3 * time.Second

// maxHeader bounds a request's headers (http.DefaultMaxHeaderBytes, said).
const maxHeader = 1 << 20

// guardOf is o's guard, or one with o.Token alone.
func guardOf(e Engine, o Options) *Guard {
	if o.Guard != nil {
		return o.Guard
	}
	var srcs []TokenSource
	if o.Token != "" {
		srcs = []TokenSource{{Name: "token", Role: RoleAdmin, Value: o.Token}}
	}
	var log *slog.Logger
	if e != nil {
		log = e.Log()
	}
	g, err := NewGuard(GuardConfig{Tokens: srcs, OpenMetrics: true, Log: log})
	if err != nil {
		panic(err) // a token given as a value, not empty, is read without error
	}
	return g
}

// Handler serves every endpoint.
func Handler(e Engine, o Options) http.Handler { return handler(e, o, guardOf(e, o)) }

func handler(e Engine, o Options, g *Guard) http.Handler {
	mux := http.NewServeMux()
	if o.Gatherer != nil {
		var h http.Handler = promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{})
		if !g.openMetrics {
			h = g.need(RoleReader, h.ServeHTTP)
		}
		mux.Handle("GET /metrics", h)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	a := newAPI(e, o, g)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		st, ok := a.store(w)
		if !ok {
			return
		}
		rctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		// One small read on every store, that answers whatever the number
		// of jobs and markers; not behind the shared places, so readers of
		// the dashboard never make a replica look unready.
		_, err := st.r.Pauses(rctx)
		a.storeCall(rctx, err)
		if err != nil {
			http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	a.routes(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" || !strings.HasPrefix(r.URL.Path, "/api/") {
			mux.ServeHTTP(w, r)
			return
		}
		// No route: the mux's answer (404, or 405 with Allow) as a JSON error.
		probe := &statusProbe{h: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.code != http.StatusNotFound && probe.code != http.StatusMethodNotAllowed {
			mux.ServeHTTP(w, r) // a redirect to the clean path
			return
		}
		if allow := probe.h.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		code := map[int]string{http.StatusNotFound: codeNotFound, http.StatusMethodNotAllowed: codeNoMethod}[probe.code]
		httpError(w, probe.code, code, fmt.Sprintf("%s %s: %s", r.Method, r.URL.Path, strings.ToLower(http.StatusText(probe.code))))
	})
}

// statusProbe keeps the status and headers a handler answers, and drops its body.
type statusProbe struct {
	h    http.Header
	code int
}

func (p *statusProbe) Header() http.Header         { return p.h }
func (p *statusProbe) WriteHeader(code int)        { p.code = code }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
