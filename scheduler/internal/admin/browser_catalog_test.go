package admin

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// The catalog in a real headless Chromium: a job's page shows the spec in
// force in its card and an audit of the last hour, with the slots no
// replica recorded highlighted and where the history kept ends; a job
// whose spec another replica replaced shows a conflict banner with what
// differs, refuses a trigger, and is marked in the jobs view; the cluster
// view gives each replica's revision. Screenshots of the job pages,
// job-audit.png and job-catalog.png, are saved where the log says.
func TestCatalogInBrowser(t *testing.T) {
	needBrowser(t)
	tick := spec(t, "tick", "*/10 * * * * *", "")
	tick.Deadline, tick.History = time.Second, 12*time.Hour
	report := spec(t, "report", never, "")
	// The catalog dates tick's spec back 18 hours: its slots before this
	// replica started have no marker, and those before 12 hours ago are
	// beyond the history kept.
	cs := &catalogStore{back: 18 * time.Hour}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{tick, report}, revision: 5,
		store: func(st slotstore.Store) slotstore.Store { cs.Store = st; return cs },
		opts:  Options{Token: "s3cret", StoreKind: "memory"}})
	b := r.browse(t)

	b.open("#/jobs/tick")
	b.wait("the spec card, the slots run and the unaccounted ones", `
		const card = document.getElementById('spec-card').textContent;
		const fates = [...document.querySelectorAll('#audit-body tr[data-slot]')].map((tr) => tr.dataset.fate);
		return document.getElementById('spec-fingerprint').textContent === `+jsString(engine.SpecOf(tick, 5).Fingerprint)+` &&
			document.getElementById('spec-source').textContent === 'a' && document.getElementById('spec-revision').textContent === '5' &&
			card.includes('*/10 * * * * *') && card.includes('this replica’s spec is in force') &&
			document.getElementById('spec-conflict').hidden &&
			fates.includes('done') && fates.includes('unaccounted') &&
			document.querySelector('#audit-body tr.unaccounted') !== null &&
			/ unaccounted/.test(document.getElementById('audit-summary').textContent)`)
	b.click("#audit-unaccounted")
	b.wait("the unaccounted slots only", `
		const fates = [...document.querySelectorAll('#audit-body tr[data-slot]')].map((tr) => tr.dataset.fate);
		return fates.length > 0 && fates.every((f) => f === 'unaccounted')`)
	b.click("#audit-unaccounted")
	b.wait("every fate again", `return [...document.querySelectorAll('#audit-body tr[data-slot]')].some((tr) => tr.dataset.fate === 'done')`)
	b.shot("job-audit")
	b.selectValue("#audit-window", "86400")
	b.wait("a day, longer than the history kept, says where it ends", `
		return /^History ends at /.test(document.getElementById('audit-history').textContent) &&
			/beyond history/.test(document.getElementById('audit-summary').textContent)`)
	b.selectValue("#audit-window", "3600")
	b.wait("the hour again, within the history kept", `return /^History is kept from /.test(document.getElementById('audit-history').textContent) &&
		!/beyond history/.test(document.getElementById('audit-summary').textContent)`)

	// Another replica puts another schedule of report in force.
	other := report
	other.Schedule = spec(t, "report", "0 4 * * *", "").Schedule
	theirs := r.enrollAs(t, "b", other, 7)
	b.open("#/jobs/report")
	b.wait("the conflict banner, with what differs", `
		const banner = document.getElementById('spec-conflict');
		return !banner.hidden && banner.textContent.includes('Spec conflict') && banner.textContent.includes(`+jsString(theirs.Fingerprint)+`) &&
			[...document.querySelectorAll('#spec-differs li')].some((li) => li.textContent.startsWith('schedule: ') && li.textContent.includes('0 4 * * *')) &&
			document.getElementById('spec-source').textContent === 'b' && document.getElementById('spec-revision').textContent === '7' &&
			document.getElementById('spec-card').textContent.includes('this replica’s spec differs')`)
	b.keys("#token", "s3cret")
	b.click(`#token-form button[type="submit"]`)
	b.wait("the actions on, for the token's role", `return !document.getElementById('trigger').disabled`)
	b.click("#trigger")
	b.wait("the trigger refused, naming the spec in force", `
		const m = document.getElementById('trigger-msg').textContent;
		return m.startsWith('Trigger refused: ') && m.includes('is not the spec in force') && m.includes(`+jsString(theirs.Fingerprint)+`)`)
	b.wait("no markup from the API became elements", noMarkup)
	b.shot("job-catalog")

	b.open("#/")
	b.wait("report marked in the jobs view, tick not", `
		return cell('report', 'name').textContent.includes('spec conflict') && cell('tick', 'name') && !cell('tick', 'name').textContent.includes('spec conflict')`)
	b.click("#nav-cluster")
	b.wait("this replica's revision, and b's by its beat", `
		const a = document.querySelector('#replicas-body tr[data-replica="a"] td[data-col="revision"]');
		const b = document.querySelector('#replicas-body tr[data-replica="b"] td[data-col="revision"]');
		return a && a.textContent.startsWith('5') && b && b.textContent === '7'`)
	b.check()
}
