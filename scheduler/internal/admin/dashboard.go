package admin

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"strings"
)

// The dashboard's page: dashboard.html with its style and script inlined,
// so it loads nothing but the JSON API, and works air-gapped.
var (
	//go:embed dashboard.html dashboard.css dashboard*.js
	assets embed.FS
	// scripts are the page's script, in order, in one function's scope.
	scripts = []string{"dashboard.js", "dashboard_jobs.js", "dashboard_catalog.js", "dashboard_job.js", "dashboard_cluster.js", "dashboard_schedules.js",
		"dashboard_actions.js", "dashboard_main.js"}

	pageCSS = asset("dashboard.css")
	pageJS  = func() string {
		var b strings.Builder
		b.WriteString("\n(function () {\n'use strict';\n")
		for _, name := range scripts {
			b.WriteString(asset(name))
		}
		b.WriteString("})();\n")
		return b.String()
	}()
)

func asset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// page is the served page; csp its Content-Security-Policy, which allows
// exactly its own style and script, by hash, and requests to this origin.
var page, csp = func() (string, string) {
	html := strings.Replace(asset("dashboard.html"), "<style></style>", "<style>"+pageCSS+"</style>", 1)
	html = strings.Replace(html, "<script></script>", "<script>"+pageJS+"</script>", 1)
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return html, "default-src 'none'; script-src " + hash(pageJS) + "; style-src " + hash(pageCSS) +
		"; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

// dashboard serves the page at GET /. It is static: the page reads the
// JSON API itself, so it loads, and says so, when the store is down.
func dashboard(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write([]byte(page))
}
