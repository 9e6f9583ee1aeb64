package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// A path under /api/ that no endpoint serves is answered as every API
// error is, in JSON with a code: 404 not_found, or 405
// method_not_allowed with the methods the path takes in Allow. Elsewhere
// the server's plain answers stand.
func TestUnmatchedAPIPaths(t *testing.T) {
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "report", never, "")}})
	for _, c := range []struct {
		method, target string
		status         int
		code, allow    string
	}{
		{"GET", "/api/nope", http.StatusNotFound, codeNotFound, ""},
		{"GET", "/api/jobs/report/nope", http.StatusNotFound, codeNotFound, ""},
		{"GET", "/api/jobs/x/trigger", http.StatusMethodNotAllowed, codeNoMethod, "POST"},
		{"DELETE", "/api/jobs", http.StatusMethodNotAllowed, codeNoMethod, "GET, HEAD"},
	} {
		what := c.method + " " + c.target
		code, h, body := r.do(t, c.method, c.target, "", false)
		wantError(t, what, code, body, c.status, c.code, c.target)
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", what, ct)
		}
		if got := h.Get("Allow"); got != c.allow {
			t.Errorf("%s: Allow %q, want %q", what, got, c.allow)
		}
	}
	code, h, body := r.do(t, "GET", "/nope", "", false)
	if code != http.StatusNotFound || strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("GET /nope: %d %s %q, want the server's plain 404", code, h.Get("Content-Type"), body)
	}
}
