package admin

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// The actions log in the dashboard, in a real headless Chromium: empty at
// first, it says nothing was recorded; an operator pauses a job from the
// job's page with a reason, and the job's link to its actions shows the
// pause with the token's name, its role and the reason, and a trigger
// refused while paused marked as not ok; the kind filter, kept in the URL,
// leaves only the pause; a reader's token reads the log too, a page at a
// time.
func TestActionsInBrowser(t *testing.T) {
	needBrowser(t)
	var srcs []TokenSource
	for _, role := range []Role{RoleReader, RoleOperator, RoleAdmin} {
		srcs = append(srcs, TokenSource{Name: "the-" + role.String(), Role: role, Value: roleTokens[role]})
	}
	g, err := NewGuard(GuardConfig{Tokens: srcs, ReadAuth: true, OpenMetrics: true, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "report", never, ""), spec(t, "digest", never, "")}, opts: Options{Guard: g}})
	b := r.browse(t)
	b.open("#/actions")
	b.wait("the token asked for", `return document.getElementById('token-state').textContent.includes('wants a token')`)
	b.keys("#token", roleTokens[RoleOperator])
	b.click(`#token-form button[type="submit"]`)
	b.wait("the empty log, saying so", `const e = document.getElementById('actions-empty');
		return e && e.textContent.startsWith('Nothing recorded yet') && document.getElementById('problem').hidden &&
			document.getElementById('nav-actions').getAttribute('aria-current') === 'page'`)

	b.open("#/jobs/report")
	b.wait("the pause on, for the operator", `return document.getElementById('token-state').textContent.includes('the-operator (operator)') &&
		!document.getElementById('pause-submit').disabled && document.getElementById('pause-submit').textContent === 'Pause job'`)
	b.keys("#pause-reason", "db <i>migration</i>")
	b.click("#pause-submit")
	b.wait("the job paused", `return document.getElementById('pause-msg').textContent === 'Paused report.' &&
		document.getElementById('pause-submit').textContent === 'Resume job'`)
	if code, _, body := r.as(t, roleTokens[RoleOperator], "", "POST", "/api/jobs/report/trigger", ""); code != http.StatusConflict {
		t.Fatalf("a trigger of the paused job: %d %s, want 409", code, body)
	}
	if code, _, body := r.as(t, roleTokens[RoleOperator], "", "POST", "/api/jobs/digest/trigger", ""); code != http.StatusAccepted {
		t.Fatalf("a trigger of another job: %d %s", code, body)
	}

	b.click("#job-actions-link")
	rows := `[...document.querySelectorAll('#actions-body tr[data-seq]')]`
	cells := `(tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)`
	b.wait("the job's actions: the pause by the operator with its reason, the refused trigger marked", `
		const rs = `+rows+`;
		if (rs.length !== 2 || document.getElementById('a-target').value !== 'report' || !location.hash.includes('target=report')) return false;
		const [trig, pause] = rs.map(`+cells+`);
		return trig[4] === 'trigger' && rs[0].className === 'a-failed' && !trig[7].startsWith('ok') &&
			pause[1] === 'the-operator' && pause[2] === 'operator' && pause[3] === 'http' && pause[4] === 'pause' &&
			pause[5] === 'report' && pause[6] === 'db <i>migration</i>' && pause[7] === 'ok' && rs[1].className === 'a-ok' &&
			rs[1].querySelector('a.job-link').getAttribute('href') === '#/jobs/report' &&
			rs[1].querySelector('td span[title]').title.endsWith('Z')`)
	b.wait("no markup from the API became elements", noMarkup)
	b.shot("actions")
	b.selectValue("#a-kind", "pause")
	b.wait("only the pause, the kind in the URL", `const rs = `+rows+`;
		return rs.length === 1 && rs.every((tr) => tr.dataset.kind === 'pause') && location.hash.includes('kind=pause')`)
	b.js(`document.getElementById('a-target').value = ''; document.getElementById('a-target').dispatchEvent(new Event('input'));`)
	b.selectValue("#a-kind", "trigger")
	b.wait("only the triggers, of both jobs", `const rs = `+rows+`;
		return rs.length === 2 && rs.every((tr) => tr.dataset.kind === 'trigger') && location.hash === '#/actions?kind=trigger'`)

	b.click("#token-forget")
	b.keys("#token", roleTokens[RoleReader])
	b.click(`#token-form button[type="submit"]`)
	b.wait("the reader's token", `return document.getElementById('token-state').textContent.includes('the-reader (reader)')`)
	// A full page of reloads after them: the operator's pause is on the
	// older page.
	for i := range 100 {
		if _, err := r.st.AppendAction(t.Context(), slotstore.Action{Who: "slotcron", Via: "slotcron", Kind: "config", Result: "ok",
			Detail: fmt.Sprintf("revision %d", i+1), Retain: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	b.open("#/actions")
	b.wait("the newest page, read by the reader", `const rs = `+rows+`;
		return rs.length === 100 && rs.every((tr) => tr.dataset.kind === 'config') && !document.getElementById('a-older').disabled &&
			document.getElementById('a-newer').disabled && document.getElementById('problem').hidden`)
	b.click("#a-older")
	b.wait("the older page: the operator's pause with its reason", `const rs = `+rows+`.map(`+cells+`);
		return rs.length === 3 && rs[2][4] === 'pause' && rs[2][1] === 'the-operator' && rs[2][6] === 'db <i>migration</i>' &&
			document.getElementById('a-older').disabled && !document.getElementById('a-newer').disabled`)
	b.check()
}
