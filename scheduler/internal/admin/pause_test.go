package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// Pause and resume need a reason, take their parameters as a JSON body or
// as query parameters, record who and why in the store, and log it.
func TestPauseReason(t *testing.T) {
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "report", never, "")}})
	pauses := func() slotstore.Pauses {
		t.Helper()
		ps, err := r.st.Pauses(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	long := strings.Repeat("x", maxNote+1)
	for _, c := range []struct {
		what, target, body string
		says               []string
	}{
		{"no reason", "/api/pause?job=report", "", []string{"reason is required"}},
		{"a blank reason", "/api/pause", `{"job": "report", "reason": "  "}`, []string{"reason is required"}},
		{"resume with no reason", "/api/resume?job=report", `{"by": "alice"}`, []string{"resume", "reason is required"}},
		{"a misspelt field", "/api/pause", `{"job": "report", "reasn": "deploy"}`, []string{`"reasn"`, "unknown"}},
		{"an unknown query parameter", "/api/pause?jbo=report&reason=x", "", []string{`"jbo"`}},
		{"a field twice", "/api/pause?reason=a", `{"reason": "b"}`, []string{`"reason"`, "both"}},
		{"a body that is not an object", "/api/pause", `["report"]`, []string{"want a JSON object of fields", "not a list"}},
		{"a body that is not JSON", "/api/pause", `reason=x`, []string{"body: not JSON"}},
		{"a reason that is a number", "/api/pause", `{"job": "report", "reason": 5}`, []string{`body field "reason": want a string, not the number 5`}},
		{"a by that is a boolean", "/api/pause", `{"reason": "x", "by": true}`, []string{`body field "by": want a string, not true`}},
		{"a reason that is an object", "/api/pause", `{"reason": {"a": 1}}`, []string{`"reason"`}},
		{"an empty job", "/api/pause?job=&reason=x", "", []string{"job is empty"}},
		// null is a job given empty, not left out: not the whole cluster.
		{"a null job", "/api/pause", `{"job": null, "reason": "x"}`, []string{"job is empty"}},
		{"a null job, resumed", "/api/resume", `{"job": null, "reason": "x"}`, []string{"job is empty"}},
		{"a reason too long", "/api/pause?reason=" + long, "", []string{"reason is longer than 1000"}},
	} {
		code, _, body := r.do(t, "POST", c.target, c.body, true)
		wantError(t, c.what, code, body, http.StatusBadRequest, codeBadRequest, c.says...)
	}
	if ps := pauses(); ps.All || len(ps.Jobs) != 0 {
		t.Fatalf("refused requests paused %+v", ps)
	}
	code, _, body := r.do(t, "POST", "/api/pause", `{"job": "nope", "reason": "x"}`, true)
	wantError(t, "an unknown job", code, body, http.StatusNotFound, codeNoJob, `"nope"`)
	code, _, body = r.do(t, "POST", "/api/pause?reason=x", "", false)
	wantError(t, "no token", code, body, http.StatusUnauthorized, codeUnauthorized)

	// JSON body, with by.
	code, _, body = r.do(t, "POST", "/api/pause", `{"job": "report", "reason": "deploy <b>v2</b>", "by": "alice"}`, true)
	if code != http.StatusOK || body != `{"all":false,"jobs":["report"],"was_paused":false}`+"\n" {
		t.Fatalf("pause: %d %s", code, body)
	}
	if n := pauses().Notes["report"]; n.By != "alice" || n.Reason != "deploy <b>v2</b>" || n.At.IsZero() {
		t.Errorf("note %+v, want alice's, with the reason as given", n)
	}
	var v jobView
	r.get(t, "/api/jobs/report", &v)
	if v.Pause == nil || v.Pause.By != "alice" || v.Pause.Reason != "deploy <b>v2</b>" {
		t.Errorf("GET /api/jobs/report: pause %+v", v.Pause)
	}
	if logs := r.logs.String(); !strings.Contains(logs, `job=report paused=true by=alice reason="deploy <b>v2</b>"`) {
		t.Errorf("the pause is not logged with who and why:\n%s", logs)
	}

	// Query parameters; by defaults to the token's name and the caller's address.
	code, _, body = r.do(t, "POST", "/api/pause?reason=maintenance+window", "", true)
	if code != http.StatusOK || !strings.Contains(body, `"all":true`) {
		t.Fatalf("cluster pause: %d %s", code, body)
	}
	if n := pauses().Notes[""]; n.By != "token (http 192.0.2.1:1234)" || n.Reason != "maintenance window" {
		t.Errorf("cluster note %+v, want by the token's name and the caller's address", n)
	}
	code, _, body = r.do(t, "POST", "/api/resume", `{"reason": "done", "by": "bob"}`, true)
	if code != http.StatusOK || !strings.Contains(body, `"all":false`) {
		t.Fatalf("cluster resume: %d %s", code, body)
	}
	if !strings.Contains(body, `"was_paused":true`) {
		t.Errorf("cluster resume: %s, want was_paused true", body)
	}
	code, _, body = r.do(t, "POST", "/api/resume?job=report", `{"reason": "fixed"}`, true)
	if ps := pauses(); code != http.StatusOK || ps.All || len(ps.Jobs) != 0 || len(ps.Notes) != 0 || !strings.Contains(body, `"was_paused":true`) {
		t.Errorf("resume: %d %s, pauses now %+v", code, body, ps)
	}
	// A resume of what is not paused is no error, and says it was not.
	code, _, body = r.do(t, "POST", "/api/resume?job=report", `{"reason": "again"}`, true)
	if code != http.StatusOK || !strings.Contains(body, `"was_paused":false`) {
		t.Errorf("resume of a job not paused: %d %s, want 200 and was_paused false", code, body)
	}
	if logs := r.logs.String(); !strings.Contains(logs, `paused=false by=bob reason=done`) {
		t.Errorf("the resume is not logged with who and why:\n%s", logs)
	}
}
