package admin

import (
	"testing"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// The dashboard of a replica whose reads need a token, in a real headless
// Chromium: it asks for the token when the API answers 401; with a reader
// token it shows the jobs, and the actions a reader may not take are
// disabled, each saying the role it needs.
func TestReaderInBrowser(t *testing.T) {
	needBrowser(t)
	g, err := NewGuard(GuardConfig{ReadAuth: true, OpenMetrics: true, Tokens: []TokenSource{
		{Name: "grafana", Role: RoleReader, Value: "r3ader"}, {Name: "ops", Role: RoleAdmin, Value: "s3cret"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "nightly", never, "")}, opts: Options{Guard: g, StoreKind: "memory"}})
	b := r.browse(t)
	b.open("#/")
	b.wait("the token asked for", `return document.getElementById('token-state').textContent.includes('wants a token') &&
		document.getElementById('problem').textContent.includes('enter the API token')`)
	b.keys("#token", "r3ader")
	b.click(`#token-form button[type="submit"]`)
	b.wait("the jobs, read with the reader's token", `return document.getElementById('token-state').textContent.includes('grafana (reader)') &&
		document.getElementById('main').textContent.includes('nightly') && document.getElementById('problem').hidden`)
	b.open("#/jobs/nightly")
	b.wait("trigger, pause and backfill disabled, saying why", `
		return ['trigger', 'pause-submit', 'bf-preview'].every((id) => {
			const e = document.getElementById(id);
			return e && e.disabled && e.title === 'needs the operator role';
		})`)
	b.shot("reader-job")
	b.open("#/cluster")
	b.wait("the cluster's pause disabled, saying why", `
		const e = document.getElementById('cluster-submit');
		return e && e.disabled && e.title === 'needs the admin role'`)
}
