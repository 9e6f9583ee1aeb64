package admin

import (
	"testing"

	"github.com/slotcron/slotcron/policy"
)

// A job page, in a real headless Chromium, shows which slots are the
// job's: its overlap (queue explained), DST rule, the calendars it skips
// and the next slot one of them skips; a job whose window is over as
// ended; one with max_runs its window, its count and its end.
func TestJobBoundsInBrowser(t *testing.T) {
	needBrowser(t)
	js := boundedJobs(t)
	js[0].Overlap = policy.OverlapQueue
	r := newRig(t, rigConfig{jobs: js})
	b := r.browse(t)
	settings := `document.getElementById('job-settings').textContent`

	b.open("#/jobs/holiday")
	b.wait("the overlap, the DST rule, the calendars and the skipped next slot", `const s = `+settings+`;
		return document.getElementById('job-name').textContent === 'holiday' &&
			s.includes('queue (a slot waits for the running one)') &&
			document.getElementById('job-dst').textContent === 'gap skip, repeat first' &&
			document.getElementById('job-except').textContent === 'calendar ops (1 date), calendar holidays (2 dates)' &&
			document.getElementById('next-skip').textContent === 'skipped: calendar holidays' &&
			document.getElementById('job-ended').hidden && !document.getElementById('job-end')`)
	b.shot("job-calendars")

	b.open("#/jobs/over")
	b.wait("the job ended: no next slot, its end", `const s = `+settings+`;
		return document.getElementById('job-name').textContent === 'over' && !document.getElementById('job-ended').hidden &&
			s.includes('none: the job ended') && document.getElementById('job-end').textContent.includes('ended') &&
			document.getElementById('job-active').textContent.startsWith('from ') &&
			!document.getElementById('next-skip') && !document.getElementById('job-dst') && !document.getElementById('job-except')`)

	b.open("#/jobs/counted")
	b.wait("the active window, max_runs and the end", `
		return document.getElementById('job-name').textContent === 'counted' &&
			document.getElementById('job-active').textContent === 'from 2030-01-01 00:00:00Z until 2030-01-03 08:00:00Z' &&
			document.getElementById('job-max-runs').textContent === '3, counted from 2030-01-01 00:00:00Z' &&
			document.getElementById('job-end').textContent === '2030-01-03 08:00:00Z' &&
			document.getElementById('job-ended').hidden && `+settings+`.includes('allow (slots may run together)')`)

	b.open("#/jobs/plain")
	b.wait("none of them on a job without them", `
		return document.getElementById('job-name').textContent === 'plain' && document.getElementById('job-settings').textContent.includes('Next slot') &&
			!['job-dst', 'job-except', 'job-active', 'job-max-runs', 'job-end', 'next-skip'].some((id) => document.getElementById(id))`)
	b.check()
}
