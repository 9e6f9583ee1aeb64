package admin

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// catalogStore, a store whose catalog reads fail while down is set, hides
// the entry of the job hide, and dates every spec in force back by back.
type catalogStore struct {
	slotstore.Store
	hide string
	back time.Duration
	down atomic.Bool
}

func (c *catalogStore) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	if c.down.Load() {
		return nil, errDown
	}
	es, err := c.Store.Catalog(ctx, p)
	es = slices.DeleteFunc(es, func(en slotstore.CatalogEntry) bool { return en.Job == c.hide })
	for i := range es {
		es[i].InForce.Since = es[i].InForce.Since.Add(-c.back)
	}
	return es, err
}

// enrollAs enrolls js's spec of job as replica, which beats, live for an
// hour and with revision: a live carrier, so this replica does not take
// force back.
func (r *rig) enrollAs(t *testing.T, replica string, js engine.JobSpec, revision int64) slotstore.Spec {
	t.Helper()
	r.beat(t, replica, revision)
	s := engine.SpecOf(js, revision)
	if _, err := r.st.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{js.Name}, Replica: replica, Specs: []slotstore.Spec{s}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// beat records a beat of replica, running revision, that stands for an
// hour.
func (r *rig) beat(t *testing.T, replica string, revision int64) {
	t.Helper()
	if err := r.st.Beat(t.Context(), slotstore.Beat{Replica: replica, Version: "test", Started: time.Now(), TTL: time.Hour,
		Revision: revision}); err != nil {
		t.Fatal(err)
	}
}

// GET /api/jobs and /api/jobs/{job} carry each job's catalog entry: the
// spec in force, its source, and this replica's spec set against it; a
// job the catalog lacks says so.
func TestJobCatalog(t *testing.T) {
	report := spec(t, "report", never, "")
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{report, spec(t, "fresh", never, "")},
		store: func(st slotstore.Store) slotstore.Store { return &catalogStore{Store: st, hide: "fresh"} }})
	own := engine.SpecOf(report, 0)

	var j jobView
	r.get(t, "/api/jobs/report", &j)
	c := j.Catalog
	if c.Status != catalogInForce || c.InForce == nil || c.InForce.Fingerprint != own.Fingerprint || c.Own.Fingerprint != own.Fingerprint ||
		c.InForce.Replica != "a" || c.InForce.Since == "" || !c.InForce.Readable || c.InForce.SpecBody == nil ||
		c.InForce.Schedule != report.Schedule.String() || c.Conflict != nil || len(c.Others) != 0 ||
		len(c.Carriers) != 1 || c.Carriers[0].Replica != "a" {
		t.Errorf("report's catalog: %+v (in force %+v)", c, c.InForce)
	}
	r.get(t, "/api/jobs/fresh", &j)
	if c := j.Catalog; c.Status != catalogNotEnrolled || c.InForce != nil || c.Own.Fingerprint == "" {
		t.Errorf("fresh's catalog, not in the store's: %+v", c)
	}

	// Another replica puts another schedule in force; a third beats but
	// carries no spec of it.
	other := report
	other.Schedule = spec(t, "report", "0 4 * * *", "").Schedule
	theirs := r.enrollAs(t, "b", other, 0)
	r.beat(t, "c", 0)
	var js []jobView
	r.get(t, "/api/jobs", &js)
	i := slices.IndexFunc(js, func(v jobView) bool { return v.Name == "report" })
	if i < 0 {
		t.Fatalf("no report in %+v", js)
	}
	c = js[i].Catalog
	if c.Status != catalogConflict || c.InForce.Fingerprint != theirs.Fingerprint || c.InForce.Replica != "b" || c.Conflict == nil ||
		c.Conflict.Own != own.Fingerprint || c.Conflict.InForce != theirs.Fingerprint {
		t.Fatalf("report in conflict: %+v (in force %+v)", c, c.InForce)
	}
	if len(c.Conflict.Differs) != 1 || !strings.HasPrefix(c.Conflict.Differs[0], "schedule: ") || !strings.Contains(c.Conflict.Differs[0], "0 4 * * *") {
		t.Errorf("report's differences: %q, want the schedule's", c.Conflict.Differs)
	}
	if !slices.Contains(c.Others, otherView{Replica: "a", Spec: own.Fingerprint}) || !slices.Contains(c.Others, otherView{Replica: "c"}) ||
		slices.ContainsFunc(c.Others, func(o otherView) bool { return o.Replica == "b" }) {
		t.Errorf("report's other replicas: %+v, want a (its own spec) and c, not b (a carrier)", c.Others)
	}
}

// A trigger of a job whose spec here is not the spec in force is refused
// with 409 spec_conflict naming both specs: at the store's refusal of its
// claim, and after, at once; and so is a backfill.
func TestTriggerSpecConflict(t *testing.T) {
	report := spec(t, "report", never, "")
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{report}})
	own := engine.SpecOf(report, 0)
	other := report
	other.Lease = time.Minute
	theirs := r.enrollAs(t, "b", other, 0)
	for _, when := range []string{"first", "again"} {
		code, _, body := r.do(t, "POST", "/api/jobs/report/trigger", "", true)
		wantError(t, "a trigger in conflict, "+when, code, body, http.StatusConflict, codeSpecConflict, own.Fingerprint, theirs.Fingerprint)
	}
	code, _, body := r.do(t, "POST", "/api/jobs/report/backfill", `{"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}`, true)
	wantError(t, "a backfill in conflict", code, body, http.StatusConflict, codeSpecConflict, own.Fingerprint, theirs.Fingerprint)
	ms, err := r.st.History(t.Context(), slotstore.HistoryParams{Job: "report"})
	if err != nil || len(ms) != 0 {
		t.Errorf("report's markers after refused triggers: %+v %v", ms, err)
	}
}

// GET /api/catalog pages the whole catalog, with past specs, each job set
// against this replica's spec, and this replica's revision.
func TestCatalogEndpoint(t *testing.T) {
	report := spec(t, "report", never, "")
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{report, spec(t, "sync", never, "")}})
	other := report
	other.Timeout = time.Hour
	theirs := r.enrollAs(t, "b", other, 0)
	r.enrollAs(t, "b", spec(t, "retired-elsewhere", never, ""), 0)

	var p catalogPage
	r.get(t, "/api/catalog", &p)
	names := func(p catalogPage) (out []string) {
		for _, j := range p.Jobs {
			out = append(out, j.Job)
		}
		return out
	}
	if p.Replica != "a" || p.Revision != 0 || !slices.Equal(names(p), []string{"report", "retired-elsewhere", "sync"}) || p.NextAfter != "" {
		t.Fatalf("the catalog: %+v", p)
	}
	rep, gone, sync := p.Jobs[0], p.Jobs[1], p.Jobs[2]
	if rep.InForce.Fingerprint != theirs.Fingerprint || !rep.Conflict || rep.Own == nil || rep.Own.Fingerprint != engine.SpecOf(report, 0).Fingerprint ||
		len(rep.Past) != 1 || rep.Past[0].Fingerprint != rep.Own.Fingerprint || rep.Past[0].Until == "" || rep.InForce.Timeout != "1h0m0s" {
		t.Errorf("report: %+v", rep)
	}
	if gone.Own != nil || gone.Conflict || sync.Own == nil || sync.Conflict || len(sync.Carriers) != 1 || sync.Carriers[0].Replica != "a" {
		t.Errorf("a job this replica lacks: %+v; one it carries: %+v", gone, sync)
	}

	var p1, p2 catalogPage
	r.get(t, "/api/catalog?limit=2", &p1)
	r.get(t, "/api/catalog?limit=2&after="+p1.NextAfter, &p2)
	if !slices.Equal(names(p1), []string{"report", "retired-elsewhere"}) || p1.NextAfter != "retired-elsewhere" ||
		!slices.Equal(names(p2), []string{"sync"}) || p2.NextAfter != "" {
		t.Errorf("pages of two: %v (next %q), %v (next %q)", names(p1), p1.NextAfter, names(p2), p2.NextAfter)
	}
	code, _, body := r.do(t, "GET", "/api/catalog?limit=0", "", false)
	wantError(t, "limit 0", code, body, http.StatusBadRequest, codeBadRequest, "limit")
}

// GET /api/jobs/{job}/audit lists every nominal slot of the window with
// its fate: run here, unaccounted (before this replica enrolled it, no
// marker), pending, beyond the history kept; bad windows, unknown jobs,
// jobs the catalog lacks and a store that fails each answer their error.
func TestJobAudit(t *testing.T) {
	tick := spec(t, "tick", "* * * * * *", "")
	tick.Deadline = time.Second
	hourly := spec(t, "hourly", "0 * * * *", "")
	hourly.History = 3 * time.Hour
	cs := &catalogStore{hide: "fresh", back: 6 * time.Hour}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{tick, hourly, spec(t, "fresh", never, "")},
		store: func(st slotstore.Store) slotstore.Store { cs.Store = st; return cs }})
	sc := &storeCalls{Engine: r.e}
	r.api = Handler(sc, Options{Token: "s3cret"})
	started := time.Now().Truncate(time.Second)
	fp := engine.SpecOf(tick, 0).Fingerprint

	// Before the engine started, no replica recorded tick's slots (the
	// catalog dates its spec back hours): unaccounted, once their window
	// closed (a minute's margin for clocks).
	audit := func(target string) (au auditView) { // afresh: a decode into an old one keeps what the new leaves out
		t.Helper()
		r.get(t, target, &au)
		return au
	}
	past := "/api/jobs/tick/audit?from=" + started.Add(-5*time.Minute).UTC().Format(time.RFC3339) + "&to=" + started.Add(-2*time.Minute).UTC().Format(time.RFC3339)
	au := audit(past)
	if au.Counts[engine.FateUnaccounted] != 181 || len(au.Slots) != 181 || au.Slots[0].Spec != fp || au.Slots[0].Holder != "" {
		t.Errorf("tick before the start: counts %v, %d slots", au.Counts, len(au.Slots))
	}
	// Since, the slots the engine ran.
	from := started.UTC().Format(time.RFC3339)
	poll.Until(t, 20*time.Second, "two slots of tick run", func() error {
		au = audit("/api/jobs/tick/audit?from=" + from)
		if au.Counts["done"] < 2 {
			return fmt.Errorf("counts %v", au.Counts)
		}
		return nil
	})
	for _, s := range au.Slots {
		switch {
		case s.Spec != fp:
			t.Errorf("slot %s under spec %q, want %s", s.Slot, s.Spec, fp)
		case s.Fate == "done" && (s.Outcome != "succeeded" || s.Holder != "a" || s.Fence == 0 || s.Attempts != 1 || s.Origin != ""):
			t.Errorf("a slot run: %+v", s)
		case s.Fate == engine.FateUnaccounted:
			t.Errorf("a slot since the start, unaccounted: %+v", s)
		}
	}
	if au.Job != "tick" || au.From != from || au.To == "" || au.Truncated || au.HistoryFrom == "" {
		t.Errorf("the audit: %+v", au)
	}

	// A manual slot is listed with its origin, though no spec's.
	if code, _, body := r.do(t, "POST", "/api/jobs/hourly/trigger", "", true); code != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", code, body)
	}
	poll.Until(t, 20*time.Second, "the manual slot in the audit", func() error {
		au = audit("/api/jobs/hourly/audit?from=" + from)
		if !slices.ContainsFunc(au.Slots, func(s auditSlotView) bool { return s.Origin == "manual" && s.Spec == "" && s.Holder == "a" }) {
			return fmt.Errorf("none in %+v", au)
		}
		return nil
	})

	// A window longer than the history kept says where it ends.
	now := time.Now()
	au = audit("/api/jobs/hourly/audit?from=" + now.Add(-5*time.Hour).UTC().Format(time.RFC3339) + "&to=" + now.Add(-time.Hour).UTC().Format(time.RFC3339))
	hf, err := time.Parse(time.RFC3339, au.HistoryFrom)
	if err != nil || hf.Before(now.Add(-3*time.Hour-time.Minute)) || hf.After(now.Add(-3*time.Hour+time.Minute)) {
		t.Errorf("hourly's history from %q, want about 3 hours ago", au.HistoryFrom)
	}
	if au.Counts[engine.FateBeyondHistory] < 1 || au.Counts[engine.FateUnaccounted] < 1 || len(au.Slots) < 3 || len(au.Slots) > 5 {
		t.Errorf("hourly's audit: counts %v, %d slots", au.Counts, len(au.Slots))
	}

	for _, c := range []struct {
		what, target string
		status       int
		code         string
		says         []string
	}{
		{"no from", "/api/jobs/tick/audit", 400, codeBadRequest, []string{"from is required"}},
		{"a bad from", "/api/jobs/tick/audit?from=yesterday", 400, codeBadRequest, []string{"from", "yesterday", "RFC 3339"}},
		{"a bad to", "/api/jobs/tick/audit?from=2026-01-01T00:00:00Z&to=1700000000", 400, codeBadRequest, []string{"to", "1700000000"}},
		{"to before from", "/api/jobs/tick/audit?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", 400, codeBadRange, []string{"to 2026-01-01T00:00:00Z is before from"}},
		{"an unknown job", "/api/jobs/nope/audit?from=2026-01-01T00:00:00Z", 404, codeNoJob, []string{`"nope"`}},
		{"a job not in the catalog", "/api/jobs/fresh/audit?from=2026-01-01T00:00:00Z", 404, codeNotInCatalog, []string{"fresh"}},
	} {
		code, _, body := r.do(t, "GET", c.target, "", false)
		wantError(t, c.what, code, body, c.status, c.code, c.says...)
	}
	if f := sc.take(); len(f) != 0 {
		t.Errorf("refused audits recorded the store failing: %q", f)
	}

	// The store down: 503, recorded as its failure, in the job's view too.
	cs.down.Store(true)
	defer cs.down.Store(false)
	code, _, body := r.do(t, "GET", "/api/jobs/tick/audit?from="+from, "", false)
	wantError(t, "an audit with the store down", code, body, http.StatusServiceUnavailable, codeStore, errDown.Error())
	if f := sc.take(); len(f) == 0 || !strings.Contains(f[0], errDown.Error()) {
		t.Errorf("an audit with the store down recorded %q, want its failure", f)
	}
	for _, target := range []string{"/api/jobs/tick", "/api/catalog"} {
		code, _, body = r.do(t, "GET", target, "", false)
		wantError(t, target+" with the catalog down", code, body, http.StatusServiceUnavailable, codeStore, "read the catalog", errDown.Error())
	}
}

// GET /api/cluster gives each replica's revision: this one's own, the
// others' by their beats.
func TestClusterRevisions(t *testing.T) {
	report := spec(t, "report", never, "")
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{report, spec(t, "sync", never, "")}, revision: 3})
	other := report
	other.Timeout = time.Hour
	r.enrollAs(t, "b", other, 7)
	r.beat(t, "c", 0)
	var c clusterView
	r.get(t, "/api/cluster", &c)
	got := map[string]int64{}
	for _, v := range c.Replicas {
		got[v.Name] = v.Revision
	}
	if want := map[string]int64{"a": 3, "b": 7, "c": 0}; c.Revision != 3 || !maps.Equal(got, want) || len(c.Errors) != 0 {
		t.Errorf("revisions %v (this replica's %d), want %v; errors %q", got, c.Revision, want, c.Errors)
	}
}
