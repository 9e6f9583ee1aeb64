package admin

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The page is served whole, with a Content-Security-Policy that allows its
// own inline style and script by hash, and requests to its origin only.
func TestDashboardPage(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(nil, Options{}).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	csp := rec.Header().Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		parts := strings.Split(body, "<"+tag+">")
		if len(parts) != 2 {
			t.Fatalf("the page has %d <%s> elements, want 1", len(parts)-1, tag)
		}
		inner, _, ok := strings.Cut(parts[1], "</"+tag+">")
		if !ok || len(inner) < 100 {
			t.Fatalf("<%s> is not inlined", tag)
		}
		sum := sha256.Sum256([]byte(inner))
		if want := tag + "-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no X-Content-Type-Options: nosniff")
	}
}

// The page loads nothing from elsewhere, so it works air-gapped: no URL
// with a scheme or a network path, no CSS import or url(), and it does not
// refresh itself.
func TestDashboardNoExternalURL(t *testing.T) {
	for _, re := range []string{
		`(?i)\b[a-z][a-z0-9+.-]*://`,                  // any scheme://
		`(?i)(src|href|action)\s*=\s*["']?\s*//`,      // a network-path reference
		`(?i)(src|href|action)\s*=\s*["']?\s*[a-z]+:`, // a URL with a scheme (data: is allowed below)
		`(?i)@import|url\(`,
		`(?i)http-equiv\s*=\s*["']?refresh`,
	} {
		for _, m := range regexp.MustCompile(re).FindAllString(page, -1) {
			if strings.Contains(m, "data:") {
				continue
			}
			t.Errorf("the page has %q (%s)", m, re)
		}
	}
	// Requests go to the page's own API, by path.
	for _, m := range regexp.MustCompile(`fetch\(([^)]*)\)`).FindAllStringSubmatch(pageJS, -1) {
		if m[1] != "path, opts" {
			t.Errorf("fetch(%s): requests go through api(method, path)", m[1])
		}
	}
	calls := regexp.MustCompile(`api\('(GET|POST)', ([^,)]*)`).FindAllStringSubmatch(pageJS, -1)
	if len(calls) < 8 {
		t.Errorf("found %d calls of api(method, path); the pattern no longer matches the script", len(calls))
	}
	for _, m := range calls {
		if arg := strings.TrimSpace(m[2]); !strings.HasPrefix(arg, "'/api/") && !strings.HasPrefix(arg, "path") &&
			!strings.HasPrefix(arg, "paused ?") && !strings.HasPrefix(arg, "pause ?") {
			t.Errorf("api(%s, %s): want a path under /api/", m[1], arg)
		}
	}
}

// The script builds the DOM from text: nothing from the API goes through
// the HTML parser.
func TestDashboardBuildsTextOnly(t *testing.T) {
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
		"setAttribute('style'", "createContextualFragment", "DOMParser"} {
		if strings.Contains(pageJS, bad) {
			t.Errorf("the script uses %s", bad)
		}
	}
	if !strings.Contains(pageJS, "textContent") || !strings.Contains(pageJS, "createTextNode") {
		t.Error("the script does not build text nodes")
	}
}
