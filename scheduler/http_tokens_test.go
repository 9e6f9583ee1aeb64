package scheduler

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A replica's tokens, from a file and a variable, each with its role; the
// file re-read on SIGHUP (the reload path), so a rotated token works at
// once, without a restart, even beside a configuration the reload refuses.
func TestHTTPTokensRotateOnHangup(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port")
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "ci-bot")
	if err := os.WriteFile(tokenFile, []byte("old-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLOTCRON_TEST_GRAFANA", "grafana-t0ken")
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	doc := "http:\n  listen: \"" + addr + "\"\n  read_auth: true\n  open_metrics: false\n  tokens:\n" +
		"    - {name: ci-bot, role: operator, file: " + tokenFile + "}\n" +
		"    - {name: grafana, role: reader, env: SLOTCRON_TEST_GRAFANA}\n" +
		"jobs: {report: {run: tick, schedule: '@daily', catch_up: none}}\n"
	cfgFile := filepath.Join(dir, "slotcron.yaml")
	if err := os.WriteFile(cfgFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := jobs.NewRegistry()
	reg.Register("tick", func(context.Context, jobs.Run) error { return nil })
	s := replica(t, memstore.New(memstore.Options{}), "a", doc, reg)
	stop := start(t, s)
	defer stop()
	base := "http://" + addr
	as := func(method, path, token string) (int, string) {
		t.Helper()
		auth := ""
		if token != "" {
			auth = "Bearer " + token
		}
		return call(t, method, base+path, auth)
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/healthz", "", http.StatusOK},
		{"GET", "/api/jobs", "", http.StatusUnauthorized},
		{"GET", "/metrics", "", http.StatusUnauthorized},
		{"GET", "/metrics", "grafana-t0ken", http.StatusOK},
		{"GET", "/api/jobs", "grafana-t0ken", http.StatusOK},
		{"POST", "/api/pause?job=report&reason=test", "grafana-t0ken", http.StatusForbidden},
		{"POST", "/api/pause?job=report&reason=test", "old-t0ken", http.StatusOK},
		{"POST", "/api/pause?reason=test", "old-t0ken", http.StatusForbidden},
	} {
		if code, body := as(c.method, c.path, c.token); code != c.want {
			t.Errorf("%s %s with %q: %d %s, want %d", c.method, c.path, c.token, code, body, c.want)
		}
	}
	if _, body := as("GET", "/api/whoami", "old-t0ken"); !strings.Contains(body, `"name":"ci-bot","role":"operator"`) {
		t.Errorf("whoami: %s", body)
	}

	if err := os.WriteFile(tokenFile, []byte("new-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A configuration the reload refuses: the tokens are re-read all the same.
	if err := os.WriteFile(cfgFile, []byte(doc+"jobz: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.reloadFile(t.Context(), cfgFile)
	if code, body := as("GET", "/api/whoami", "new-t0ken"); code != http.StatusOK || !strings.Contains(body, `"ci-bot"`) {
		t.Errorf("the new token after SIGHUP: %d %s", code, body)
	}
	if code, body := as("GET", "/api/whoami", "old-t0ken"); code != http.StatusUnauthorized {
		t.Errorf("the old token after SIGHUP: %d %s, want 401", code, body)
	}
}
