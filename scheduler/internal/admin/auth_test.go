package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// The tokens of the role tests, one a role, written in the configuration.
var roleTokens = map[Role]string{RoleReader: "reader-t0ken", RoleOperator: "operator-t0ken", RoleAdmin: "admin-t0ken"}

// roleRig is a rig whose guard has a token of each role, reads open or
// not, its failures logged to logs and counted in reg.
func roleRig(t *testing.T, readAuth, openMetrics bool) (*rig, *Guard, *prometheus.Registry, *testlog.Buffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &testlog.Buffer{}
	var srcs []TokenSource
	for _, role := range []Role{RoleReader, RoleOperator, RoleAdmin} {
		srcs = append(srcs, TokenSource{Name: "the-" + role.String(), Role: role, Value: roleTokens[role]})
	}
	g, err := NewGuard(GuardConfig{Tokens: srcs, ReadAuth: readAuth, OpenMetrics: openMetrics, Registerer: reg,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, jobs.Run) error { return nil }
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "report", never, "")}, opts: Options{Guard: g, Gatherer: reg},
		lookup: func(name string) (jobs.Func, bool) { return fn, name == "digest" }})
	if err := (storeSchedules{st: r.st}).put(t, "s1"); err != nil {
		t.Fatal(err)
	}
	return r, g, reg, logs
}

// put creates schedule id of the job digest, that never comes due.
func (f storeSchedules) put(t *testing.T, id string) error {
	_, err := f.Put(t.Context(), "test", ScheduleJSON{ID: id, Job: "digest", Schedule: "0 0 1 1 *"}, true)
	return err
}

// as sends a request with token as its bearer token (none when empty) from
// remote (httptest's default address when empty).
func (r *rig) as(t *testing.T, token, remote, method, target, body string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if remote != "" {
		req.RemoteAddr = remote
	}
	rec := httptest.NewRecorder()
	r.api.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.String()
}

// Each role gets exactly its routes: a caller below a route's role is
// answered 403 forbidden, one with no token 401 where a role is needed;
// reads are open or need the reader role as read_auth says; /healthz,
// /readyz and the page are always open, /metrics as open_metrics says.
func TestRolesPerRoute(t *testing.T) {
	routes := []struct {
		method, target, body string
		need                 Role // RoleNone: a read, which read_auth decides
		open                 bool // open whatever the settings
		first                Role // the role a caller below it is refused for first, if not need
	}{
		{"GET", "/healthz", "", RoleNone, true, RoleNone},
		{"GET", "/readyz", "", RoleNone, true, RoleNone},
		{"GET", "/", "", RoleNone, true, RoleNone},
		{"GET", "/api/whoami", "", RoleNone, false, RoleNone},
		{"GET", "/api/jobs", "", RoleNone, false, RoleNone},
		{"GET", "/api/jobs/report", "", RoleNone, false, RoleNone},
		{"GET", "/api/jobs/report/history", "", RoleNone, false, RoleNone},
		{"GET", "/api/jobs/report/audit?from=2026-01-01T00:00:00Z", "", RoleNone, false, RoleNone},
		{"GET", "/api/catalog", "", RoleNone, false, RoleNone},
		{"GET", "/api/history", "", RoleNone, false, RoleNone},
		{"GET", "/api/cluster", "", RoleNone, false, RoleNone},
		{"GET", "/api/schedules", "", RoleNone, false, RoleNone},
		{"GET", "/api/schedules/s1", "", RoleNone, false, RoleNone},
		{"POST", "/api/jobs/report/trigger", "", RoleOperator, false, RoleNone},
		{"POST", "/api/jobs/report/backfill", `{"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "dry_run": true}`, RoleOperator, false, RoleNone},
		{"POST", "/api/pause", `{"job": "report", "reason": "r"}`, RoleOperator, false, RoleNone},
		{"POST", "/api/resume", `{"job": "report", "reason": "r"}`, RoleOperator, false, RoleNone},
		{"POST", "/api/schedules/s1/pause", `{"reason": "r"}`, RoleOperator, false, RoleNone},
		{"POST", "/api/schedules/s1/resume", `{}`, RoleOperator, false, RoleNone},
		{"POST", "/api/pause", `{"reason": "r"}`, RoleAdmin, false, RoleOperator}, // the route's role, then the cluster's
		{"POST", "/api/resume", `{"reason": "r"}`, RoleAdmin, false, RoleOperator},
		{"POST", "/api/schedules", `{"id": "s2", "job": "digest", "schedule": "0 0 1 1 *"}`, RoleAdmin, false, RoleNone},
		{"PUT", "/api/schedules/s2", `{"job": "digest", "schedule": "0 0 2 1 *"}`, RoleAdmin, false, RoleNone},
		{"DELETE", "/api/schedules/s2", "", RoleAdmin, false, RoleNone},
	}
	for _, c := range []struct{ readAuth, openMetrics bool }{{false, true}, {true, false}} {
		t.Run(fmt.Sprintf("read_auth=%v,open_metrics=%v", c.readAuth, c.openMetrics), func(t *testing.T) {
			r, g, _, _ := roleRig(t, c.readAuth, c.openMetrics)
			g.limit.burst = 1e9 // the anonymous callers' 401s, from one address, are not what this test is about
			metrics := routes[0]
			metrics.target, metrics.open = "/metrics", c.openMetrics
			if !c.openMetrics {
				metrics.need = RoleReader
			}
			for _, rt := range append(routes, metrics) {
				need := rt.need
				if need == RoleNone && c.readAuth && !rt.open {
					need = RoleReader
				}
				for _, role := range []Role{RoleNone, RoleReader, RoleOperator, RoleAdmin} {
					what := fmt.Sprintf("%s %s as %q", rt.method, rt.target, role)
					code, _, body := r.as(t, roleTokens[role], "", rt.method, rt.target, rt.body)
					switch {
					case role >= need || rt.open:
						if code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusTooManyRequests {
							t.Errorf("%s: %d %s, want it let through", what, code, body)
						}
					case role == RoleNone:
						wantError(t, what, code, body, http.StatusUnauthorized, codeUnauthorized)
					case role < rt.first:
						wantError(t, what, code, body, http.StatusForbidden, codeForbidden, "needs the "+rt.first.String()+" role")
					default:
						wantError(t, what, code, body, http.StatusForbidden, codeForbidden, "needs the "+need.String()+" role")
					}
				}
			}
		})
	}
}

// whoami says the caller's name and role; anonymous, when reads are open,
// both empty; a token that is not ours is 401 even where none is needed.
func TestWhoami(t *testing.T) {
	r, _, _, _ := roleRig(t, false, true)
	for token, want := range map[string]string{"": `{"name":"","role":""}`, roleTokens[RoleOperator]: `{"name":"the-operator","role":"operator"}`} {
		code, _, body := r.as(t, token, "", "GET", "/api/whoami", "")
		var got, w any
		_ = json.Unmarshal([]byte(body), &got)
		_ = json.Unmarshal([]byte(want), &w)
		if code != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("whoami with %q: %d %s, want %s", token, code, body, want)
		}
	}
	code, _, body := r.as(t, "not-a-token", "", "GET", "/api/whoami", "")
	wantError(t, "whoami with a bad token", code, body, http.StatusUnauthorized, codeUnauthorized)
	// A proxy's credentials of another scheme are not ours to judge where
	// no token is needed.
	req := httptest.NewRequest("GET", "/api/whoami", nil)
	req.Header.Set("Authorization", "Basic YWxpY2U6c2VjcmV0")
	rec := httptest.NewRecorder()
	r.api.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("whoami with Basic credentials, reads open: %d %s, want 200", rec.Code, rec.Body)
	}
}

// Many failed authentications from one address are answered 429 without
// the token being looked at — a good token too, until the bucket refills —
// and counted; another address is not held back. No token text is in a
// log line or the metrics.
func TestFailedAuthLimited(t *testing.T) {
	r, g, reg, logs := roleRig(t, true, false)
	frozen := time.Now()
	g.limit.now = func() time.Time { return frozen } // no refill while the test runs
	const attacker, other = "198.51.100.7:4000", "203.0.113.9:5000"
	limited := 0
	for i := range 3 * failBurst {
		code, h, body := r.as(t, fmt.Sprintf("guess-%d", i), attacker, "POST", "/api/jobs/report/trigger", "")
		switch code {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
			wantError(t, "over the limit", code, body, http.StatusTooManyRequests, codeRateLimited)
			if h.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		default:
			t.Fatalf("guess %d: %d %s", i, code, body)
		}
	}
	if limited != 2*failBurst {
		t.Fatalf("%d failures from one address, %d answered 429, want all but the first %d", 3*failBurst, limited, failBurst)
	}
	// A token of ours passes from the limited address: the limit must not
	// lock out who holds one (behind a proxy, everyone shares an address).
	if code, _, body := r.as(t, roleTokens[RoleAdmin], attacker, "GET", "/api/jobs", ""); code != http.StatusOK {
		t.Errorf("a good token from the limited address: %d %s, want 200", code, body)
	}
	if code, _, body := r.as(t, roleTokens[RoleReader], other, "GET", "/api/jobs", ""); code != http.StatusOK {
		t.Errorf("another address: %d %s, want 200", code, body)
	}
	r.as(t, "", other, "GET", "/api/jobs", "")                                     // missing
	r.as(t, roleTokens[RoleReader], other, "POST", "/api/jobs/report/trigger", "") // forbidden
	failures := func(reason string) float64 {
		m, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if f.GetName() != "slotcron_http_auth_failures_total" {
				continue
			}
			for _, s := range f.GetMetric() {
				if s.GetLabel()[0].GetValue() == reason {
					return s.GetCounter().GetValue()
				}
			}
		}
		return -1
	}
	if n := failures(failLimited); n != float64(limited) {
		t.Errorf("rate_limited counted %v, want %d", n, limited)
	}
	if failures(failUnknown) != failBurst || failures(failMissing) != 1 || failures(failForbidden) != 1 {
		t.Errorf("unknown %v, missing %v, forbidden %v; want %d, 1, 1", failures(failUnknown), failures(failMissing), failures(failForbidden), failBurst)
	}
	for _, want := range []string{"reason=unknown", "reason=missing", "reason=forbidden", "remote=" + attacker, "over the limit", `route="POST /api/jobs/{job}/trigger"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, logs.String())
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{logs.String(), r.logs.String(), fmt.Sprint(families)} {
		for _, tok := range roleTokens {
			if strings.Contains(text, tok) {
				t.Errorf("token %q in:\n%s", tok, text)
			}
		}
		if strings.Contains(text, "guess-") {
			t.Errorf("a guessed token in:\n%s", text)
		}
	}
}
