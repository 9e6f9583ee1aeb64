// Package admin serves a replica's HTTP endpoints: /metrics, /healthz,
// /readyz, the JSON API under /api/ and the dashboard at /. It talks to the
// engine through the Engine interface only.
//
// Reads are open to anyone who can reach the port; mutations (trigger,
// pause, resume, backfill) need the bearer token. Every read of the store is
// bounded: the jobs list pages, each job's status reads a fixed number of
// its newest markers with bounded concurrency, and a filtered history scan
// stops after a fixed number of markers and says so. Every error body is
// {"error": "<for people>", "code": "<stable>"}.
//
// The dashboard is one static page (dashboard.html, with dashboard.css and
// dashboard.js inlined) that reads the JSON API and re-renders in place; it
// loads nothing from elsewhere and builds its DOM from text, never from
// markup, so names, errors and reasons are shown as they are.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Engine is what the admin API needs of the engine.
type Engine interface {
	Replica() string
	Now() time.Time
	Log() *slog.Logger
	// Jobs describes every job; HasJob says whether one exists.
	Jobs() []engine.Job
	HasJob(job string) bool
	// Store is the store of the Run in progress, nil when none.
	Store() slotstore.Store
	// StoreCall records whether a call to the store succeeded.
	StoreCall(err error)
	// Start claims a manual slot of job and starts its run.
	Start(ctx context.Context, job string) (engine.Started, error)
	// PausesChanged makes the Run in progress read the pauses anew.
	PausesChanged()
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
	// Token is the bearer token mutations require; empty disables them.
	Token string
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// StoreKind names the store for the cluster view ("sqlite", "redis"...);
	// empty means the name of the store's Go package.
	StoreKind string
}

// Serve listens on o.Listen and serves until ctx ends; wait returns once
// the server has stopped. A listen error is returned at once.
func Serve(ctx context.Context, e Engine, o Options) (wait func(), err error) {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("http: listen %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: Handler(e, o), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.Log().Error("http server failed", "err", err)
		}
	}()
	e.Log().Info("http listening", "addr", ln.Addr().String())
	return func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}

// Handler serves every endpoint.
func Handler(e Engine, o Options) http.Handler {
	mux := http.NewServeMux()
	if o.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	a := &api{e: e, token: o.Token, storeKind: o.StoreKind}
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		st, ok := a.store(w)
		if !ok {
			return
		}
		rctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := st.History(rctx, slotstore.HistoryParams{Limit: 1})
		e.StoreCall(err)
		if err != nil {
			http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	a.routes(mux)
	return mux
}
