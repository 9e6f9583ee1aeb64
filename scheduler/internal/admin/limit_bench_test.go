package admin

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// BenchmarkFailedLogins: 1,000 requests from one address, each with a
// token that is not configured (the first few answered 401, the rest 429
// once its token is found unknown), against 1,000 requests of /healthz, which
// needs nothing, through the same handler: what an attacker's guesses
// cost the listener, per 1,000. Compare the two in one run:
//
//	go test ./scheduler/internal/admin -run '^$' -bench FailedLogins -benchtime 20x
func BenchmarkFailedLogins(b *testing.B) {
	logs := &testlog.Buffer{}
	g, err := NewGuard(GuardConfig{Tokens: []TokenSource{{Name: "ops", Role: RoleAdmin, Value: "the-real-t0ken"}},
		ReadAuth: true, Registerer: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(engine.Config{Replica: "a", Incarnation: "bench", Log: slog.New(slog.DiscardHandler), Now: time.Now, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	h := Handler(e, Options{Guard: g})
	for _, c := range []struct {
		name, target, token string
		want                int
	}{
		{"healthz", "/healthz", "", http.StatusOK},
		{"guesses", "/api/jobs/report/trigger", "guess", http.StatusTooManyRequests},
	} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				for i := range 1000 {
					req := httptest.NewRequest("POST", c.target, nil)
					if c.target == "/healthz" {
						req.Method = "GET"
					}
					if c.token != "" {
						req.Header.Set("Authorization", fmt.Sprintf("Bearer %s-%d", c.token, i))
					}
					req.RemoteAddr = "198.51.100.7:4000"
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code == c.want {
						n++
					}
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "as-expected/1000")
		})
	}
	b.Logf("%d bytes of log for all the guesses", len(logs.String()))
}
