package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotcron/slotcron/slotstore"
)

// HTTPConfig configures the replica's HTTP endpoints.
type HTTPConfig struct {
	// Listen is the address of /metrics, /healthz, /readyz, the JSON API
	// under /api/ and the dashboard at /, such as 127.0.0.1:9090. Empty
	// means no HTTP server.
	Listen string `yaml:"listen"`
	// Token is the bearer token the API's mutations (trigger, pause,
	// resume) require. Empty disables them.
	Token string `yaml:"token"`
}

// serveHTTP listens on addr and serves until ctx ends; it returns once the
// server has stopped. A listen error is returned at once.
func (s *Scheduler) serveHTTP(ctx context.Context, addr string, gatherer prometheus.Gatherer, l *loop) (wait func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http: listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := s.store.History(rctx, slotstore.HistoryParams{Limit: 1})
		s.metrics.storeCall(err)
		if err != nil {
			http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	(&api{s: s, l: l}).routes(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server failed", "err", err)
		}
	}()
	s.log.Info("http listening", "addr", ln.Addr().String())
	return func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}
