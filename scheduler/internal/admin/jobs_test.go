package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// hostile is a job error that is markup, quotes and a script's end.
const hostile = `boom <img src=x onerror=alert(1)> "quoted" & </script>`

// GET /api/jobs shows each job's status: last success and failure, the
// failures in a row, what runs now with its lease, recent outcomes oldest
// first, pauses with their notes, and the next slot only while not paused.
func TestJobsStatus(t *testing.T) {
	var born time.Time
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{
		spec(t, "flaky", never, ""), spec(t, "sync", "0 3 1 1 *", "Europe/Berlin"), spec(t, "yearly", "0 3 1 1 *", "Europe/Berlin"),
	}})
	born = r.enroll(t, "flaky")
	slot := func(i int) time.Time {
		return born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Duration(i+1) * time.Minute)
	}
	r.marker(t, "flaky", slot(0), "b", "ok", false)
	r.marker(t, "flaky", slot(1), "b", "fail:first", false)
	r.marker(t, "flaky", slot(2), "c", "skip", false)
	r.marker(t, "flaky", slot(3), "c", "fail:"+hostile, false)
	r.marker(t, "flaky", slot(4), "b", "run", true)
	if err := r.st.SetPause(t.Context(), slotstore.PauseParams{Job: "sync", Paused: true, By: "alice", Reason: "vendor outage"}); err != nil {
		t.Fatal(err)
	}

	code, _, raw := r.do(t, "GET", "/api/jobs", "", false)
	if code != http.StatusOK {
		t.Fatalf("GET /api/jobs: %d %s", code, raw)
	}
	// The page renders text, but a JSON reader that pastes it into markup
	// must not find markup either.
	if strings.Contains(raw, "<img") || strings.Contains(raw, "</script>") || !strings.Contains(raw, `\u003cimg src=x onerror=alert(1)\u003e`) {
		t.Errorf("the hostile error is not escaped in %s", raw)
	}
	var views []jobView
	r.get(t, "/api/jobs", &views)
	by := map[string]jobView{}
	for _, v := range views {
		by[v.Name] = v
	}
	f := by["flaky"]
	if f.Health != healthFailing || f.ConsecutiveFailures != 2 || f.ConsecutiveMore || f.Scanned != 5 {
		t.Errorf("flaky: health %s, %d failures in a row (more %v), scanned %d; want failing, 2, false, 5",
			f.Health, f.ConsecutiveFailures, f.ConsecutiveMore, f.Scanned)
	}
	if f.LastSuccess == nil || f.LastSuccess.Slot != slot(0).UTC().Format(time.RFC3339) || f.LastSuccess.Duration != 1.5 {
		t.Errorf("flaky: last success %+v, want slot %s of 1.5 s", f.LastSuccess, slot(0))
	}
	if f.LastFailure == nil || f.LastFailure.Slot != slot(3).UTC().Format(time.RFC3339) || f.LastFailure.Error != hostile || f.LastFailure.Holder != "c" {
		t.Errorf("flaky: last failure %+v, want slot %s by c with the hostile error", f.LastFailure, slot(3))
	}
	if len(f.Running) != 1 || f.Running[0].Holder != "b" || !f.Running[0].Manual || f.Running[0].Elapsed < 0 ||
		f.Running[0].LeaseLeft < 3500 || f.Running[0].LeaseLeft > 3600 || f.Running[0].Key != "flaky@"+slot(4).UTC().Format(time.RFC3339) {
		t.Errorf("flaky: running %+v, want slot 4 manual on b with about an hour of lease left", f.Running)
	}
	var states []string
	for _, x := range f.Recent {
		states = append(states, x.State+"/"+x.Outcome)
	}
	if got := strings.Join(states, " "); got != "done/succeeded done/failed skipped/ done/failed running/" {
		t.Errorf("flaky: recent %s, want oldest first", got)
	}
	if f.Paused || f.Next != "" || f.Pause != nil {
		t.Errorf("flaky: paused %v, next %q, pause %+v; a schedule that never comes has no next", f.Paused, f.Next, f.Pause)
	}

	s := by["sync"]
	if !s.Paused || s.Health != healthPaused || s.Next != "" || s.NextLocal != "" || s.Pause == nil ||
		s.Pause.By != "alice" || s.Pause.Reason != "vendor outage" || s.Pause.At == "" || s.ClusterPause != nil {
		t.Errorf("sync, paused on its own: %+v", s)
	}
	y := by["yearly"]
	wantNext := time.Date(time.Now().Year()+1, 1, 1, 3, 0, 0, 0, y0(t))
	if time.Now().Before(time.Date(time.Now().Year(), 1, 1, 3, 0, 0, 0, y0(t))) {
		wantNext = time.Date(time.Now().Year(), 1, 1, 3, 0, 0, 0, y0(t))
	}
	if y.Paused || y.Health != healthIdle || y.Next != wantNext.UTC().Format(time.RFC3339) || y.NextLocal != wantNext.Format(time.RFC3339) ||
		y.Timezone != "Europe/Berlin" {
		t.Errorf("yearly: %+v, want next %s in UTC and Berlin time", y, wantNext)
	}
	if y.StartingDeadline != "1m0s" || y.History != "24h0m0s" || y.CatchUp != "none" || y.Jitter != "0s" || y.Retries.Max != 0 {
		t.Errorf("yearly's settings: %+v", y)
	}

	// A cluster pause empties every next slot and shows its note.
	if err := r.st.SetPause(t.Context(), slotstore.PauseParams{Paused: true, By: "bob", Reason: "migration"}); err != nil {
		t.Fatal(err)
	}
	var one jobView
	r.get(t, "/api/jobs/yearly", &one)
	if !one.Paused || one.Next != "" || one.NextLocal != "" || one.Health != healthPaused || one.ClusterPause == nil ||
		one.ClusterPause.By != "bob" || one.ClusterPause.Reason != "migration" || one.Pause != nil {
		t.Errorf("yearly in a paused cluster: %+v", one)
	}
	code, _, body := r.do(t, "GET", "/api/jobs/nope", "", false)
	wantError(t, "GET /api/jobs/nope", code, body, http.StatusNotFound, codeNoJob, `"nope"`)
}

func y0(t *testing.T) *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A failure streak longer than the first read is followed back to the
// success before it, up to streakDepth; beyond, it says there is more.
func TestJobsFailureStreak(t *testing.T) {
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "down", never, ""), spec(t, "long", never, "")}})
	born := r.enroll(t, "down", "long")
	slot := func(i int) time.Time {
		return born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Duration(i+1) * time.Second)
	}
	r.marker(t, "down", slot(0), "b", "ok", false)
	for i := 1; i <= statusDepth+10; i++ {
		r.marker(t, "down", slot(i), "b", "fail:x", false)
	}
	for i := range streakDepth + 1 {
		r.marker(t, "long", slot(i), "b", "fail:x", false)
	}
	var d, l jobView
	r.get(t, "/api/jobs/down", &d)
	if d.ConsecutiveFailures != statusDepth+10 || d.ConsecutiveMore || d.LastSuccess == nil || d.Scanned != statusDepth+11 {
		t.Errorf("down: %d failures in a row (more %v), last success %+v, scanned %d; want %d, false, slot 0, %d",
			d.ConsecutiveFailures, d.ConsecutiveMore, d.LastSuccess, d.Scanned, statusDepth+10, statusDepth+11)
	}
	r.get(t, "/api/jobs/long", &l)
	if l.ConsecutiveFailures != streakDepth || !l.ConsecutiveMore || l.LastSuccess != nil {
		t.Errorf("long: %d failures in a row (more %v), last success %+v; want %d and more", l.ConsecutiveFailures, l.ConsecutiveMore, l.LastSuccess, streakDepth)
	}
}

// countingStore counts the reads of one job's history (the engine's own
// reads, of a state store-wide, are not counted) and how many run at once.
type countingStore struct {
	slotstore.Store
	mu               sync.Mutex
	calls, now, most int
}

func (c *countingStore) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	if p.Job == "" {
		return c.Store.History(ctx, p)
	}
	c.mu.Lock()
	c.calls++
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
	}()
	// Long enough for concurrent readers to overlap.
	time.Sleep(2 * time.Millisecond)
	return c.Store.History(ctx, p)
}

func (c *countingStore) reset() (calls, most int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, most = c.calls, c.most
	c.calls, c.most = 0, 0
	return calls, most
}

// The jobs list pages and filters by name, says how many match and links
// the pages; a page reads the history of its own jobs only, at most
// `readers` at a time.
func TestJobsPaging(t *testing.T) {
	var specs []engine.JobSpec
	for i := range 200 {
		specs = append(specs, spec(t, fmt.Sprintf("job-%03d", i), never, ""))
	}
	specs = append(specs, spec(t, "Other", never, ""))
	var cs *countingStore
	r := newRig(t, rigConfig{jobs: specs, store: func(st slotstore.Store) slotstore.Store {
		cs = &countingStore{Store: st}
		return cs
	}})
	names := func(vs []jobView) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return strings.Join(out, " ")
	}

	cs.reset()
	var page []jobView
	h := r.get(t, "/api/jobs?limit=40", &page)
	calls, most := cs.reset()
	if len(page) != 40 || page[0].Name != "job-000" || h.Get("X-Total-Count") != "201" ||
		h.Get("Link") != `</api/jobs?limit=40&offset=40>; rel="next"` {
		t.Errorf("first page: %d jobs from %s, total %q, link %q", len(page), page[0].Name, h.Get("X-Total-Count"), h.Get("Link"))
	}
	t.Logf("a page of 40 jobs: %d history reads, at most %d at once", calls, most)
	if calls != 40 || most > readers {
		t.Errorf("a page of 40 jobs read job histories %d times, %d at once; want 40, at most %d at once", calls, most, readers)
	}

	h = r.get(t, "/api/jobs?limit=40&offset=180", &page)
	if names(page) != "job-180 job-181 job-182 job-183 job-184 job-185 job-186 job-187 job-188 job-189 job-190 job-191 job-192 job-193 job-194 job-195 job-196 job-197 job-198 job-199 Other" ||
		h.Get("Link") != `</api/jobs?limit=40&offset=140>; rel="prev"` {
		t.Errorf("last page: %s, link %q", names(page), h.Get("Link"))
	}
	h = r.get(t, "/api/jobs?q=JOB-19&limit=5", &page)
	if names(page) != "job-190 job-191 job-192 job-193 job-194" || h.Get("X-Total-Count") != "10" ||
		h.Get("Link") != `</api/jobs?limit=5&offset=5&q=JOB-19>; rel="next"` {
		t.Errorf("q=JOB-19: %s, total %q, link %q", names(page), h.Get("X-Total-Count"), h.Get("Link"))
	}
	r.get(t, "/api/jobs?q=nothing-matches", &page)
	if page == nil || len(page) != 0 {
		t.Errorf("no match: %v, want []", page)
	}
	for _, target := range []string{"/api/jobs?limit=0", "/api/jobs?limit=1001", "/api/jobs?limit=x", "/api/jobs?offset=-1"} {
		code, _, body := r.do(t, "GET", target, "", false)
		param := strings.Split(strings.TrimPrefix(target, "/api/jobs?"), "=")[0]
		wantError(t, target, code, body, http.StatusBadRequest, codeBadRequest, param)
	}
}

// A job's name may hold any character but '@', braces and spaces: the
// paths of its endpoints carry it escaped, as the page sends it.
func TestJobNameInPath(t *testing.T) {
	const name = "etl/daily?v=1#x%<b>"
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, name, never, "")}})
	base := "/api/jobs/" + url.PathEscape(name)
	var v jobView
	r.get(t, base, &v)
	var p historyPage
	r.get(t, base+"/history", &p)
	if v.Name != name || p.Job != name {
		t.Errorf("job %q, history of %q, want %q", v.Name, p.Job, name)
	}
	code, _, body := r.do(t, "POST", base+"/trigger", "", true)
	if code != http.StatusAccepted || !strings.Contains(body, `"job":"etl/daily?v=1#x%\u003cb\u003e"`) {
		t.Errorf("trigger: %d %s", code, body)
	}
}

// More slots than one read takes (runningLimit) run cluster-wide: a job
// whose run is not among those read is still shown running, and stalled
// once its lease has ended, from a read of its own.
func TestJobsRunningBeyondOneRead(t *testing.T) {
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "stuck", never, ""), spec(t, "live", never, "")}})
	// The store's clock runs an hour behind this replica's: stuck's
	// ten-minute lease has ended fifty minutes ago by this replica's clock,
	// and no replica may take its slot over yet by the store's.
	r.lag.Store(int64(time.Hour))
	born := r.enroll(t, "stuck", "live", "busy")
	claim := func(job string, slot time.Time, lease time.Duration) {
		t.Helper()
		res, err := r.st.Claim(t.Context(), slotstore.ClaimParams{Replica: "b", Requests: []slotstore.ClaimRequest{{Job: job, Slot: slot, Lease: lease}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim %s@%s: %v %v", job, slot, res, err)
		}
	}
	// The oldest slots, so the one read of every job's, newest first,
	// stops before them.
	claim("stuck", born.Add(slotstore.ClaimLead+time.Second), 10*time.Minute)
	claim("live", born.Add(slotstore.ClaimLead+2*time.Second), 24*time.Hour)
	var reqs []slotstore.ClaimRequest
	for i := range runningLimit + 1 {
		reqs = append(reqs, slotstore.ClaimRequest{Job: "busy", Slot: born.Add(time.Duration(10+i) * time.Second), Lease: 24 * time.Hour})
	}
	res, err := r.st.Claim(t.Context(), slotstore.ClaimParams{Replica: "c", Requests: reqs})
	if err != nil || res[len(res)-1].Status != slotstore.Won {
		t.Fatalf("claim %d slots of busy: %v", len(reqs), err)
	}

	var views []jobView
	r.get(t, "/api/jobs", &views)
	if len(views) != 2 {
		t.Fatalf("jobs %+v, want stuck and live", views)
	}
	for i, want := range []string{healthStalled, healthRunning} {
		v := views[i]
		if v.Health != want || len(v.Running) != 1 || v.Running[0].Holder != "b" {
			t.Errorf("%s with %d slots running elsewhere: health %s, running %+v; want %s, its one slot on b",
				v.Name, runningLimit+1, v.Health, v.Running, want)
		}
	}
	var c clusterView
	r.get(t, "/api/cluster", &c)
	if !c.RunningMore {
		t.Errorf("the cluster view with %d slots running: running %d, running_more false", runningLimit+3, c.Running)
	}
}

// A lease ends by the store's clock, and this replica's may run ahead of
// it: a run is called stalled only once its lease ended stallMargin ago
// (5 s for a 15 s lease) by this replica's clock, not as soon as it looks
// ended.
func TestStalledMargin(t *testing.T) {
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{spec(t, "skewed", never, ""), spec(t, "gone", never, "")}})
	r.lag.Store(int64(40 * time.Second))
	born := r.enroll(t, "skewed", "gone")
	// Each claimed when the store's clock was lag behind this replica's:
	// its 15 s lease looks to have ended lag-15 s ago. The store's clock
	// stays 40 s behind, so no replica takes either over meanwhile.
	for _, c := range []struct {
		job string
		lag time.Duration
	}{{"skewed", 18 * time.Second}, {"gone", 40 * time.Second}} {
		r.lag.Store(int64(c.lag))
		res, err := r.st.Claim(t.Context(), slotstore.ClaimParams{Replica: "b", Requests: []slotstore.ClaimRequest{
			{Job: c.job, Slot: born.Add(slotstore.ClaimLead + time.Second), Lease: 15 * time.Second}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim %s: %v %v", c.job, res, err)
		}
	}
	r.lag.Store(int64(40 * time.Second))
	var skewed, gone jobView
	r.get(t, "/api/jobs/skewed", &skewed)
	r.get(t, "/api/jobs/gone", &gone)
	if len(skewed.Running) != 1 || skewed.Health != healthRunning || skewed.Running[0].Stalled ||
		skewed.Running[0].LeaseLeft > -2 || skewed.Running[0].LeaseLeft < -5 {
		t.Errorf("a run whose lease looks ended 3 s ago: health %s, running %+v; want running, not stalled, lease_left about -3",
			skewed.Health, skewed.Running)
	}
	if len(gone.Running) != 1 || gone.Health != healthStalled || !gone.Running[0].Stalled {
		t.Errorf("a run whose lease ended 25 s ago: health %s, running %+v; want stalled", gone.Health, gone.Running)
	}
}
