package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// TestActionsByRole: a job's pause and resume and a trigger by the
// operator's token, a backfill by the admin's and a cluster pause it makes
// are in the actions log with the token's name, its role and the reason;
// a request refused for its role, a dry run and the reads are not. The log
// reads newest first, filtered and a page at a time.
func TestActionsByRole(t *testing.T) {
	var srcs []TokenSource
	for _, role := range []Role{RoleReader, RoleOperator, RoleAdmin} {
		srcs = append(srcs, TokenSource{Name: "the-" + role.String(), Role: role, Value: roleTokens[role]})
	}
	g, err := NewGuard(GuardConfig{Tokens: srcs, ReadAuth: true, OpenMetrics: true, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "report", "0 * * * *", "")}, opts: Options{Guard: g}})
	op, admin, reader := roleTokens[RoleOperator], roleTokens[RoleAdmin], roleTokens[RoleReader]
	from := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		token, target, body string
		want                int
	}{
		{op, "/api/pause", `{"job":"report","reason":"db migration"}`, http.StatusOK},
		{reader, "/api/resume", `{"job":"report","reason":"not mine to resume"}`, http.StatusForbidden},
		{op, "/api/resume", `{"job":"report","reason":"migrated"}`, http.StatusOK},
		{op, "/api/jobs/report/trigger", "", http.StatusAccepted},
		{admin, "/api/jobs/report/backfill", `{"from":"` + from + `","dry_run":true}`, http.StatusOK},
		{admin, "/api/jobs/report/backfill", `{"from":"` + from + `"}`, http.StatusOK},
		{op, "/api/pause", `{"reason":"freeze"}`, http.StatusForbidden},
		{admin, "/api/pause", `{"reason":"freeze"}`, http.StatusOK},
	} {
		if code, _, body := r.as(t, c.token, "", "POST", c.target, c.body); code != c.want {
			t.Fatalf("POST %s %s: %d %s, want %d", c.target, c.body, code, body, c.want)
		}
	}
	var page actionsPage
	code, _, body := r.as(t, reader, "", "GET", "/api/actions", "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("GET /api/actions: %d %s", code, body)
	}
	var got []string
	for i := len(page.Actions) - 1; i >= 0; i-- {
		a := page.Actions[i]
		if a.Kind == "config" {
			continue
		}
		got = append(got, strings.Join([]string{a.Kind, a.Target, a.Who, a.Role, a.Via, a.Reason, a.Result}, "|"))
	}
	want := []string{
		"pause|report|the-operator|operator|http|db migration|ok",
		"resume|report|the-operator|operator|http|migrated|ok",
		"trigger|report|the-operator|operator|http||ok",
		"backfill|report|the-admin|admin|http||ok",
		"pause||the-admin|admin|http|freeze|ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the actions log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	code, _, body = r.as(t, reader, "", "GET", "/api/actions?who=the-operator&limit=2", "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Actions) != 2 ||
		page.Actions[0].Kind != "trigger" || page.Next == 0 {
		t.Fatalf("the operator's newest two: %d %s", code, body)
	}
	code, _, body = r.as(t, reader, "", "GET", "/api/actions?who=the-operator&limit=2&before="+jsonNum(page.Next), "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Actions) != 1 || page.Actions[0].Kind != "pause" {
		t.Fatalf("the next page: %d %s", code, body)
	}
	if code, _, body = r.as(t, "", "", "GET", "/api/actions", ""); code != http.StatusUnauthorized {
		t.Fatalf("the log without a token under read_auth: %d %s", code, body)
	}
	if code, _, body = r.as(t, reader, "", "GET", "/api/actions?since=yesterday", ""); code != http.StatusBadRequest {
		t.Fatalf("a bad since: %d %s", code, body)
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }
