package admin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/jobs"
)

// The schedules held as data in the dashboard, in a real headless
// Chromium: the list shows each schedule's health and filters by ID
// prefix, job and health; a schedule's page shows its definition, params
// as text, and its recent slots; with the token it pauses with a reason and
// deletes after a confirmation.
func TestSchedulesInBrowser(t *testing.T) {
	needBrowser(t)
	digest := func(_ context.Context, run jobs.Run) error {
		if strings.Contains(run.Job, "bad") {
			return errors.New(hostile)
		}
		return nil
	}
	r := newRig(t, rigConfig{lookup: func(name string) (jobs.Func, bool) { return digest, name == "digest" }})
	api := storeSchedules{st: r.st}
	for _, s := range []ScheduleJSON{
		{ID: "tenant-001", Job: "digest", Schedule: "* * * * * *", Params: []byte(`{"email":"<b>bold</b>@example.com"}`)},
		{ID: "tenant-bad", Job: "digest", Schedule: "* * * * * *"},
		{ID: "other-1", Job: "digest", Schedule: "0 0 1 1 *", Timezone: "Europe/Berlin"},
	} {
		if _, err := api.Put(t.Context(), "test", s, true); err != nil {
			t.Fatal(err)
		}
	}
	b := r.browse(t)
	b.open("#/schedules")
	rows := `[...document.querySelectorAll('#schedules-body tr[data-id]')].map((tr) => tr.dataset.id + ':' + tr.className).join(' ')`
	b.wait("every schedule with its health", `const r = `+rows+`;
		return r.includes('tenant-001:h-ok') && r.includes('tenant-bad:h-failing') && r.includes('other-1:h-never')`)
	b.keys("#s-prefix", "tenant-")
	b.wait("only the tenants", `return `+rows+`.split(' ').map((x) => x.split(':')[0]).join(' ') === 'tenant-001 tenant-bad'`)
	b.selectValue("#s-health", "failing")
	b.wait("only the failing tenant", `return `+rows+` === 'tenant-bad:h-failing'`)
	b.selectValue("#s-health", "")
	b.wait("both tenants again", `return document.querySelectorAll('#schedules-body tr[data-id]').length === 2`)
	b.shot("schedules")

	b.click(`#schedules-body tr[data-id="tenant-001"] a.schedule-link`)
	b.wait("the schedule's page: definition, params as text, recent slots", `
		const def = document.getElementById('schedule-def').textContent;
		return document.getElementById('schedule-id').textContent === 'tenant-001' && def.includes('* * * * * *') &&
			def.includes('<b>bold</b>@example.com') && document.querySelectorAll('#schedule-history tr td').length >= 6 &&
			document.getElementById('schedule-history').textContent.includes('succeeded')`)
	b.wait("no markup from the API became elements", noMarkup)
	b.shot("schedule")
	b.keys("#token", "s3cret")
	b.click(`#token-form button[type="submit"]`)
	b.wait("the actions on, for the token's role", `return !document.getElementById('s-pause').disabled`)
	b.click("#s-pause")
	b.wait("a pause without a reason is refused", `return document.getElementById('s-msg').textContent.includes('reason is required')`)
	b.keys("#s-pause-reason", "tenant on hold")
	b.click("#s-pause")
	b.wait("the schedule paused", `return document.getElementById('schedule-state').textContent === 'paused' &&
		document.getElementById('s-pause').textContent === 'Resume'`)
	if n := r.pauseNote(t, "tenant-001"); n.Reason != "tenant on hold" {
		t.Fatalf("the pause's note: %+v", n)
	}
	b.js(`window.confirm = () => true;`)
	b.click("#s-delete")
	b.wait("the schedule deleted", `return document.getElementById('s-msg').textContent.startsWith('Deleted tenant-001') &&
		document.getElementById('schedule-state').textContent === 'deleted or never made'`)
	if _, err := api.Get(t.Context(), "tenant-001"); err == nil {
		t.Fatal("the schedule is still there after the delete")
	}
	b.check()
}
