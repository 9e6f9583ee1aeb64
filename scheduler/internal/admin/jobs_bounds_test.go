package admin

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// boundedJobs are a job whose next slot a calendar skips, with a DST rule;
// one whose active window is over; one that ends after max_runs; and one
// with none of them.
func boundedJobs(t *testing.T) []engine.JobSpec {
	t.Helper()
	now := time.Now().UTC()
	holiday := spec(t, "holiday", "0 9 * * *", "")
	sched, err := holiday.Schedule.WithDST(schedule.DST{Gap: schedule.GapSkip, Repeat: schedule.RepeatFirst})
	if err != nil {
		t.Fatal(err)
	}
	holiday.Schedule = sched
	holiday.Except = []engine.Calendar{{Name: "ops", Dates: []string{"2020-01-01"}},
		{Name: "holidays", Dates: []string{now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)}}}
	over := spec(t, "over", "* * * * * *", "")
	over.Schedule = over.Schedule.Within(now.Add(-2*time.Hour), now.Add(-time.Hour))
	counted := spec(t, "counted", "0 9 * * *", "Europe/Berlin")
	from := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	counted.MaxRuns = 3
	counted.Schedule = counted.Schedule.Within(from, engine.LastOfRuns(counted.Schedule, nil, from, 3))
	return []engine.JobSpec{holiday, over, counted, spec(t, "plain", "0 9 * * *", "Europe/Berlin")}
}

// GET /api/jobs shows a job's DST rule, calendars, active window, max_runs
// and end, whether it ended, and when a calendar skips its next slot; a
// job without them has none of the fields.
func TestJobsBounds(t *testing.T) {
	r := newRig(t, rigConfig{jobs: boundedJobs(t)})
	var views []jobView
	r.get(t, "/api/jobs", &views)
	by := map[string]jobView{}
	for _, v := range views {
		by[v.Name] = v
	}
	h := by["holiday"]
	if h.DST == nil || *h.DST != (DSTJSON{Gap: "skip", Repeat: "first"}) || len(h.Except) != 2 ||
		h.Except[1] != (calendarView{Name: "holidays", Dates: 2}) || h.NextSkip != "calendar holidays" || h.Ended || h.End != "" {
		t.Errorf("holiday: dst %+v, except %+v, next_skip %q, ended %v, end %q", h.DST, h.Except, h.NextSkip, h.Ended, h.End)
	}
	o := by["over"]
	_, until := r.mustJob(t, "over").Schedule.Bounds()
	if !o.Ended || o.End != until.Format(time.RFC3339) || o.ActiveUntil != o.End || o.ActiveFrom == "" || o.Next != "" || o.NextSkip != "" {
		t.Errorf("over: ended %v, end %q, active %q to %q, next %q", o.Ended, o.End, o.ActiveFrom, o.ActiveUntil, o.Next)
	}
	c := by["counted"]
	if c.MaxRuns != 3 || c.ActiveFrom != "2030-01-01T00:00:00Z" || c.End != "2030-01-03T08:00:00Z" || c.Ended ||
		c.Next != "2030-01-01T08:00:00Z" || c.DST != nil || c.Except != nil {
		t.Errorf("counted: max_runs %d, active from %q, end %q, ended %v, next %q, dst %+v", c.MaxRuns, c.ActiveFrom, c.End, c.Ended, c.Next, c.DST)
	}
	code, _, raw := r.do(t, "GET", "/api/jobs/plain", "", false)
	if code != http.StatusOK {
		t.Fatalf("GET /api/jobs/plain: %d %s", code, raw)
	}
	for _, key := range []string{"dst", "except", "active_from", "active_until", "max_runs", "end", "ended", "next_skip"} {
		if strings.Contains(raw, `"`+key+`"`) {
			t.Errorf("plain has %s: %s", key, raw)
		}
	}
}

// mustJob is the engine's spec of job name.
func (r *rig) mustJob(t *testing.T, name string) engine.JobSpec {
	t.Helper()
	j, ok := r.e.Job(name)
	if !ok {
		t.Fatalf("no job %s", name)
	}
	return j
}
