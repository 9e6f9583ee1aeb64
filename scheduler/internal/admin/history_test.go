package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// A job's history pages by slot with next_before, shows each slot's start,
// finish, duration, holder, fence and attempt, and filters by state,
// outcome, attempt and manual, the last three while paging.
func TestJobHistory(t *testing.T) {
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "report", never, ""), spec(t, "other", never, "")}})
	born := r.enroll(t, "report", "other")
	slot := func(i int) time.Time {
		return born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Duration(i+1) * time.Minute)
	}
	// 30 slots: every third failed, every fifth manual, every seventh
	// retried on another replica, one running, one skipped.
	for i := range 30 {
		end, holder := "ok", "b"
		switch {
		case i == 29:
			end = "run"
		case i == 28:
			end = "skip"
		case i%7 == 3:
			end, holder = "retry", "c"
		case i%3 == 0:
			end = fmt.Sprintf("fail:error %d", i)
		}
		r.marker(t, "report", slot(i), holder, end, i%5 == 0 && end != "skip")
	}
	r.marker(t, "other", slot(0), "b", "ok", false)

	type page struct {
		Job         string
		Slots       []slotView
		NextBefore  string `json:"next_before"`
		Scanned     int
		ScanStopped bool `json:"scan_stopped"`
	}
	read := func(query string) page {
		t.Helper()
		var p page
		r.get(t, "/api/jobs/report/history?"+query, &p)
		return p
	}
	slots := func(p page) string {
		var out []string
		for _, s := range p.Slots {
			ts, _ := time.Parse(time.RFC3339, s.Slot)
			out = append(out, fmt.Sprint(int(ts.Sub(born.Truncate(time.Second))/time.Minute)-1))
		}
		return strings.Join(out, " ")
	}

	// Paging: 30 slots in pages of 12, newest first, the last page with
	// no cursor.
	var got []string
	q := url.Values{"limit": {"12"}}
	for pages := 0; ; pages++ {
		p := read(q.Encode())
		got = append(got, slots(p))
		if p.NextBefore == "" || pages > 5 {
			break
		}
		q.Set("before", p.NextBefore)
	}
	if want := []string{"29 28 27 26 25 24 23 22 21 20 19 18", "17 16 15 14 13 12 11 10 9 8 7 6", "5 4 3 2 1 0"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("pages %q, want %q", got, want)
	}
	p := read("limit=30")
	if p.NextBefore != "" || len(p.Slots) != 30 {
		t.Errorf("a page as long as the history: %d slots, next_before %q, want 30 and none", len(p.Slots), p.NextBefore)
	}

	// Each slot's details.
	p = read("limit=30")
	byIndex := map[string]slotView{}
	for i, s := range p.Slots {
		byIndex[fmt.Sprint(29-i)] = s
	}
	if s := byIndex["3"]; s.Attempt != 2 || s.Holder != "c" || s.Fence == 0 || s.ClaimedAt == "" || s.FinishedAt == "" ||
		s.Duration != 1.5 || s.Outcome != "succeeded" {
		t.Errorf("slot 3, retried on c: %+v", s)
	}
	if s := byIndex["29"]; s.State != "running" || s.LeaseEnd == "" || s.FinishedAt != "" {
		t.Errorf("slot 29, running: %+v", s)
	}
	if s := byIndex["6"]; s.Outcome != "failed" || s.Error != "error 6" || s.LeaseEnd != "" {
		t.Errorf("slot 6, failed: %+v", s)
	}

	// Filters, alone and together, applied while paging.
	for _, c := range []struct{ query, want string }{
		{"outcome=failed", "27 21 18 15 12 9 6 0"},
		{"outcome=failed&limit=4", "27 21 18 15"},
		{"outcome=failed&limit=4&before=" + slot(15).UTC().Format(time.RFC3339), "12 9 6 0"},
		{"attempt_gt=1", "24 17 10 3"},
		{"attempt_gt=0&limit=3", "29 27 26"},
		{"manual=true", "25 20 15 10 5 0"},
		{"manual=false&outcome=failed", "27 21 18 12 9 6"},
		{"state=skipped", "28"},
		{"state=running", "29"},
		{"outcome=timeout", ""},
	} {
		if p := read(c.query); slots(p) != c.want || p.ScanStopped {
			t.Errorf("%s: %q (scan stopped %v), want %q", c.query, slots(p), p.ScanStopped, c.want)
		}
	}
	if p := read("outcome=failed&limit=4"); p.NextBefore != slot(15).UTC().Format(time.RFC3339) || p.Scanned != 15 {
		t.Errorf("outcome=failed&limit=4: next_before %q after %d scanned, want slot 15 after 15", p.NextBefore, p.Scanned)
	}

	for _, c := range []struct{ query, param string }{
		{"state=bogus", "state"}, {"outcome=maybe", "outcome"}, {"attempt_gt=-1", "attempt_gt"}, {"manual=perhaps", "manual"},
		{"before=yesterday", "before"}, {"limit=0", "limit"}, {"limit=1001", "limit"},
	} {
		code, _, body := r.do(t, "GET", "/api/jobs/report/history?"+c.query, "", false)
		wantError(t, c.query, code, body, http.StatusBadRequest, codeBadRequest, c.param)
	}
	code, _, body := r.do(t, "GET", "/api/jobs/nope/history", "", false)
	wantError(t, "history of an unknown job", code, body, http.StatusNotFound, codeNoJob, "nope")
}

// A filter the store cannot apply reads at most scanBudget markers for a
// page: past that it stops, says so, and its cursor continues the scan.
func TestJobHistoryScanStops(t *testing.T) {
	if testing.Short() {
		t.Skip("records ten thousand markers")
	}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "busy", never, "")}})
	born := r.enroll(t, "busy")
	slot := func(i int) time.Time {
		return born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Duration(i+1) * time.Second)
	}
	r.marker(t, "busy", slot(0), "b", "fail:the one failure", false)
	for i := 1; i <= scanBudget+50; i++ {
		r.marker(t, "busy", slot(i), "b", "ok", false)
	}
	type page struct {
		Slots       []slotView
		NextBefore  string `json:"next_before"`
		Scanned     int
		ScanStopped bool `json:"scan_stopped"`
	}
	var p, p2 page
	r.get(t, "/api/jobs/busy/history?outcome=failed", &p)
	if len(p.Slots) != 0 || !p.ScanStopped || p.Scanned != scanBudget || p.NextBefore != slot(51).UTC().Format(time.RFC3339) {
		t.Fatalf("first scan: %d slots, stopped %v after %d, next_before %s; want none, stopped after %d, before slot 51",
			len(p.Slots), p.ScanStopped, p.Scanned, p.NextBefore, scanBudget)
	}
	r.get(t, "/api/jobs/busy/history?outcome=failed&before="+url.QueryEscape(p.NextBefore), &p2)
	if len(p2.Slots) != 1 || p2.Slots[0].Error != "the one failure" || p2.ScanStopped || p2.NextBefore != "" || p2.Scanned != 51 {
		t.Errorf("second scan: %+v", p2)
	}
}
