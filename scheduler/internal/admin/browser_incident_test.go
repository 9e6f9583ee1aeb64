package admin

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// The dashboard in the incident an operator opens it for, in a real
// headless Chromium with a 1280×800 window: four jobs with the names, zones
// and histories of a real deployment fit the window without scrolling
// sideways; a job paused after failures in a row (by slotcron, with the
// last error, as pause_after_failures pauses it) says on its page who
// paused it and why; and while the whole cluster is paused every view (the
// jobs, a job's page with its history, the cluster) loads without an error
// and says who paused the cluster and why. Screenshots of each are saved
// where the log says.
func TestDashboardInIncident(t *testing.T) {
	needBrowser(t)
	r := newIncidentRig(t)
	b := r.browse(t)
	b.do("a 1280×800 window", chromedp.EmulateViewport(1280, 800))

	// Every column of the jobs view, the next slot's too, within the window.
	b.open("#/")
	b.wait("every job with its next slot, within the window's width", incidentHelpers+`
		if (!incidentJobs.every((j) => row(j) && /\d\d:\d\d:\d\d/.test(cell(j, 'next').textContent))) return false;
		return cell('search-index-rebuild', 'running').textContent.includes('scheduler-7c9f8d6b5-x2kqp') &&
			cell('crm-contacts-sync', 'last_failure').textContent.includes(`+jsString(lastError)+`) && fits()`)
	b.wait("no error", healthy)
	b.shot("jobs-1280")

	// A job paused after failures: who paused it and why, on its page.
	r.pause(t, "crm-contacts-sync", "slotcron", afterFailures)
	b.open("#/jobs/crm-contacts-sync")
	b.wait("the job's pause by slotcron, with the last error", `
		const st = document.getElementById('job-status').textContent;
		return st.includes('job paused by slotcron') && st.includes(`+jsString(afterFailures)+`) &&
			document.getElementById('pause-submit').textContent === 'Resume job' &&
			document.querySelectorAll('#history-body tr[data-slot]').length >= 3`)
	b.wait("no error", healthy)
	b.shot("job-paused-after-failures")

	// The whole cluster paused: every view, its note in each.
	r.pause(t, "", "carol", "store failover in progress")
	b.open("#/")
	b.wait("the jobs view: the banner with who and why, each job paused, within the window's width", incidentHelpers+`
		const banner = document.getElementById('cluster-banner');
		return !banner.hidden && banner.textContent === 'The whole cluster is paused by carol: “store failover in progress”. ' +
			'No job starts a scheduled slot until it is resumed (Cluster view).' &&
			incidentJobs.every((j) => row(j) && cell(j, 'health').textContent.includes('cluster paused by carol') &&
				cell(j, 'next').textContent.includes('none while paused')) &&
			cell('crm-contacts-sync', 'health').textContent.includes('job paused by slotcron') && fits()`)
	b.wait("no error", healthy)
	b.shot("jobs-cluster-paused")
	// A search that matches no job still shows the cluster's pause.
	b.keys("#filter", "no-such-job")
	b.wait("no job matches, and the banner stays", `
		const banner = document.getElementById('cluster-banner');
		return document.getElementById('jobs-body').textContent.includes('No job matches') &&
			!banner.hidden && banner.textContent.startsWith('The whole cluster is paused by carol')`)
	b.wait("no error", healthy)
	b.js(`const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'))`)
	for _, job := range []string{"crm-contacts-sync", "billing-invoice-export"} {
		b.open("#/jobs/" + job)
		b.wait(job+"'s page: the cluster's pause with who and why, and the history", `
			const st = document.getElementById('job-status').textContent;
			return document.getElementById('job-name').textContent === `+jsString(job)+` &&
				st.includes('cluster paused by carol') && st.includes('store failover in progress') &&
				(`+jsString(job)+` !== 'crm-contacts-sync' || st.includes('job paused by slotcron') && st.includes(`+jsString(afterFailures)+`)) &&
				document.querySelectorAll('#history-body tr[data-slot]').length >= 3`)
		b.wait("no error", healthy)
		b.shot("job-cluster-paused-" + job)
	}
	b.click("#nav-cluster")
	b.wait("the cluster view: the pause with who and why, the job paused on its own", `
		const p = document.getElementById('cluster-pause').textContent;
		return p.includes('The whole cluster is paused by carol') && p.includes('store failover in progress') &&
			p.includes('Jobs paused on their own: crm-contacts-sync') &&
			document.getElementById('cluster-submit').textContent === 'Resume the cluster' &&
			document.getElementById('store').textContent.includes('ok')`)
	b.wait("no error", healthy)
	b.shot("cluster-paused")
	b.check()
}

// lastError is how crm-contacts-sync failed its last three slots, and
// afterFailures the note pause_after_failures leaves on a job it pauses.
const (
	lastError     = "POST /v2/contacts/sync: 503 Service Unavailable"
	afterFailures = "3 failed slots in a row; last error: " + lastError
)

// healthy holds while the page's last refresh succeeded and it shows no
// problem; fits while the jobs table needs no scrolling sideways.
const (
	healthy = `const s = document.getElementById('status');
		return s.className === 'status ok' && s.textContent.startsWith('updated') && document.getElementById('problem').hidden`
	incidentHelpers = `
	const incidentJobs = ['billing-invoice-export', 'postgres-nightly-backup', 'search-index-rebuild', 'crm-contacts-sync'];
	const fits = () => {
		const wrap = document.querySelector('#jobs-view .table-wrap'), page = document.documentElement;
		return wrap.scrollWidth <= wrap.clientWidth && page.scrollWidth <= page.clientWidth;
	};`
)

// newIncidentRig runs a replica with four jobs as a deployment has them,
// each with twenty slots of history run by another replica: one job failed
// its last three slots, one is running there now.
func newIncidentRig(t *testing.T) *rig {
	specs := []engine.JobSpec{
		spec(t, "billing-invoice-export", "*/15 * * * *", "UTC"),
		spec(t, "postgres-nightly-backup", "30 2 * * *", "Europe/Berlin"),
		spec(t, "search-index-rebuild", "0 * * * *", "America/Los_Angeles"),
		spec(t, "crm-contacts-sync", "*/10 * * * *", "UTC"),
	}
	for i := range specs {
		specs[i].History = 90 * 24 * time.Hour
	}
	return newRig(t, rigConfig{jobs: specs, opts: Options{StoreKind: "memory"}, before: func(r *rig) {
		// The jobs were enrolled a month ago.
		r.lag.Store(int64(30 * 24 * time.Hour))
		for _, s := range specs {
			r.enroll(t, s.Name)
		}
		r.lag.Store(0)
		now := time.Now()
		for _, s := range specs {
			slot := s.Schedule.Prev(now)
			for i := range 20 {
				end := "ok"
				switch {
				case s.Name == "crm-contacts-sync" && i < 3:
					end = "fail:" + lastError
				case s.Name == "search-index-rebuild" && i == 0:
					end = "run"
				}
				r.marker(t, s.Name, slot, "scheduler-7c9f8d6b5-x2kqp", end, false)
				slot = s.Schedule.Prev(slot.Add(-time.Second))
			}
		}
	}})
}

// pause pauses job (the cluster when empty) in the store, as by says.
func (r *rig) pause(t *testing.T, job, by, reason string) {
	t.Helper()
	if err := r.st.SetPause(t.Context(), slotstore.PauseParams{Job: job, Paused: true, By: by, Reason: reason}); err != nil {
		t.Fatalf("pause %q: %v", job, err)
	}
}

// A job that pause_after_failures itself paused — its engine ran it, it
// failed twice in a row, and it was paused by slotcron with the count and
// the last error — shows on its page who paused it and why, with no error,
// also while the whole cluster is paused.
func TestDashboardJobPausedAfterFailures(t *testing.T) {
	needBrowser(t)
	j := spec(t, "flaky-export", "* * * * * *", "UTC")
	j.PauseAfterFailures = 2
	j.Fn = func(context.Context, jobs.Run) error { return errors.New("upstream 503") }
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{j}, opts: Options{StoreKind: "memory"}})
	var note slotstore.PauseNote
	poll.Until(t, 30*time.Second, "pause_after_failures to pause the job", func() error {
		ps, err := r.st.Pauses(t.Context())
		if err != nil {
			return err
		}
		n, ok := ps.Notes["flaky-export"]
		if !ok || n.By != "slotcron" {
			return fmt.Errorf("pauses %+v", ps)
		}
		note = n
		return nil
	})
	r.pause(t, "", "carol", "store failover in progress")
	b := r.browse(t)
	b.open("#/jobs/flaky-export")
	b.wait("the job's pause by slotcron, with its reason, and the cluster's", `
		const st = document.getElementById('job-status').textContent;
		return st.includes('job paused by slotcron') && st.includes(`+jsString(note.Reason)+`) &&
			st.includes('upstream 503') && st.includes('cluster paused by carol') &&
			document.getElementById('pause-submit').textContent === 'Resume job'`)
	b.wait("no error", healthy)
	b.shot("job-paused-after-failures-real")
	b.check()
}
