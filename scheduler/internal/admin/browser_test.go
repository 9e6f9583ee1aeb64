package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// chromium is the browser the dashboard test drives (Debian's package).
const chromium = "/usr/bin/chromium"

// The dashboard, in a real headless Chromium, against a running replica
// with a job that succeeds, one that fails with a hostile error, one that
// runs long, one paused and one to trigger, and a duty: the jobs view shows
// each job's health, the failure as text, the pause's note and a
// sparkline, and sorts and filters; a job page shows its history and
// filters it, triggers with the token and pauses with a reason; the cluster
// view lists the replica and the duty's leader, and pauses the cluster only
// after a confirmation; the page fits a phone. Screenshots of each are
// saved where the log says.
func TestDashboardInBrowser(t *testing.T) {
	needBrowser(t)
	r := newDashboardRig(t)
	b := r.browse(t)

	// The jobs view.
	b.open("#/")
	b.wait("every job's row, the failure, the pause's note, the run in progress and the sparklines", `
		const want = ['hello', 'flaky-report', 'slow-export', 'paused-sync', 'nightly'];
		if (!want.every((j) => row(j))) return false;
		const fail = cell('flaky-report', 'last_failure');
		return fail.querySelector('.errtext') && fail.querySelector('.errtext').textContent === `+jsString(hostile)+` &&
			cell('flaky-report', 'health').textContent.includes('failing') &&
			cell('paused-sync', 'health').textContent.includes('alice') &&
			cell('paused-sync', 'health').textContent.includes('vendor API down <b>bold</b>') &&
			cell('paused-sync', 'next').textContent.includes('none while paused') &&
			cell('slow-export', 'running').textContent.includes('lease left') &&
			cell('hello', 'recent').querySelectorAll('svg.spark rect').length >= 2 &&
			cell('hello', 'last_success').querySelector('.when') &&
			/\+0[12]:00/.test(cell('nightly', 'next').textContent)`)
	b.wait("no markup from the API became elements", noMarkup)
	b.wait("the status line says when it updated", `return /updated/.test(document.getElementById('status').textContent)`)
	b.shot("jobs")

	// Sorting by name, then filtering by name.
	b.click(`th[data-key="name"] button`)
	b.wait("rows sorted by name", `
		const names = [...document.querySelectorAll('#jobs-body tr')].map((tr) => tr.dataset.job);
		return names.join(' ') === [...names].sort((a, b) => a.localeCompare(b)).join(' ') && names.length === 5`)
	b.keys("#filter", "FLAKY")
	b.wait("only the job the filter names", `
		const names = [...document.querySelectorAll('#jobs-body tr')].map((tr) => tr.dataset.job);
		return names.join(' ') === 'flaky-report'`)
	b.js(`const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'));`)
	b.wait("every job again", `return document.querySelectorAll('#jobs-body tr[data-job]').length === 5`)

	// The summary counts the jobs of the page shown: on a page that holds
	// them all, plainly; on a page of fewer (the API asked for pages of
	// two), saying so.
	summary := `document.getElementById('jobs-summary').textContent`
	b.wait("the summary of every job", `const s = `+summary+`; return s.startsWith('5 jobs · ') && /\b1 failing\b/.test(s) && !s.includes('page')`)
	b.js(`window.pageFetch = window.fetch; window.fetch = (u, o) => window.pageFetch(String(u).replace(/([?&])limit=\d+/, '$1limit=2'), o);
		document.getElementById('filter').dispatchEvent(new Event('input'));`)
	b.wait("pages of two, the summary of the page", `const s = `+summary+`;
		return s.startsWith('5 jobs · on this page: ') && document.querySelectorAll('#jobs-body tr[data-job]').length === 2`)
	b.js(`window.fetch = window.pageFetch; document.getElementById('filter').dispatchEvent(new Event('input'));`)
	b.wait("every job, summed up plainly again", `const s = `+summary+`;
		return document.querySelectorAll('#jobs-body tr[data-job]').length === 5 && s.startsWith('5 jobs · ') && !s.includes('page')`)

	// A job page: its settings, its failing history, a filter, the timeline.
	b.click(`#jobs-body tr[data-job="flaky-report"] a.job-link`)
	b.wait("the job page with its failed slots", `
		const rows = document.querySelectorAll('#history-body tr[data-slot]');
		return document.getElementById('job-name').textContent === 'flaky-report' &&
			document.getElementById('job-settings').textContent.includes('* * * * * *') &&
			[...rows].filter((tr) => tr.textContent.includes('done (failed)')).length >= 2 &&
			![...rows].some((tr) => tr.textContent.includes('succeeded')) &&
			document.querySelector('#history-body .errtext').textContent === `+jsString(hostile)+` &&
			document.getElementById('last-error').textContent === `+jsString(hostile)+` &&
			document.querySelectorAll('#timeline svg circle').length >= 2`)
	b.selectValue("#f-outcome", "succeeded")
	b.wait("no slot succeeded", `return document.getElementById('history-body').textContent.includes('No slot matches.')`)
	b.selectValue("#f-outcome", "failed")
	b.wait("the failed slots again", `return document.querySelectorAll('#history-body tr[data-slot]').length >= 2`)
	b.wait("no markup from the API became elements", noMarkup)
	b.shot("job")

	// Actions: disabled without the token, saying the role they need.
	b.open("#/jobs/nightly")
	b.wait("the nightly job's page", `return document.getElementById('job-name').textContent === 'nightly' && document.getElementById('job-settings').textContent.includes('Europe/Berlin')`)
	b.wait("trigger disabled, with the reason", `const t = document.getElementById('trigger'); return t.disabled && t.title === 'needs the operator role'`)
	b.keys("#token", "s3cret")
	b.click(`#token-form button[type="submit"]`)
	b.wait("the token kept for this tab, not in the URL, and the actions on", `return sessionStorage.getItem('slotcron.token') === 's3cret' && !location.href.includes('s3cret') &&
		!document.getElementById('trigger').disabled && document.getElementById('token-state').textContent.includes('token (admin)')`)
	b.click("#trigger")
	b.wait("the manual slot, started and then in the history", `
		const msg = document.getElementById('trigger-msg').textContent;
		const manual = [...document.querySelectorAll('#history-body tr[data-slot]')].filter((tr) => tr.textContent.includes('manual'));
		return msg.startsWith('Started nightly@') && manual.length === 1 && manual[0].textContent.includes('succeeded') &&
			msg.includes(manual[0].dataset.slot)`)
	b.selectValue("#f-manual", "false")
	b.wait("no scheduled slot of nightly", `return document.getElementById('history-body').textContent.includes('No slot matches.')`)
	b.selectValue("#f-manual", "true")
	b.wait("the manual slot", `return document.querySelectorAll('#history-body tr[data-slot]').length === 1`)
	// A slot a backfill ran is marked so: the store records it (an hour
	// ahead here, a second no schedule or trigger takes).
	r.backfilled(t, "nightly", time.Now().Add(time.Hour).Truncate(time.Second))
	b.selectValue("#f-manual", "false")
	b.wait("the backfilled slot, marked", `
		const rows = [...document.querySelectorAll('#history-body tr[data-slot]')];
		return rows.length === 1 && [...rows[0].querySelectorAll('.badge')].some((e) => e.textContent === 'backfill')`)

	// Pause with a reason: none is refused at once, one is recorded.
	b.click("#pause-submit")
	b.wait("a reason asked for", `return document.getElementById('pause-msg').textContent.includes('reason is required')`)
	b.keys("#pause-reason", "quarterly audit <i>freeze</i>")
	b.keys("#pause-by", "bob")
	b.click("#pause-submit")
	b.wait("the pause and its note", `
		const st = document.getElementById('job-status').textContent;
		return document.getElementById('pause-msg').textContent === 'Paused nightly.' && st.includes('job paused by bob') &&
			st.includes('quarterly audit <i>freeze</i>') && document.getElementById('pause-submit').textContent === 'Resume job' &&
			document.getElementById('job-settings').textContent.includes('none while paused')`)
	// A range that starts in the future is refused whatever the time of day.
	b.js(`document.getElementById('bf-from').value = new Date(Date.now() + 3600e3).toISOString().replace(/\.\d+Z$/, 'Z');`)
	b.click("#bf-preview")
	b.wait("the backfill refusal, inline", `return /Backfill refused: scheduler: bad backfill range: from .* is too recent/.test(document.getElementById('bf-msg').textContent)`)
	if n := r.pauseNote(t, "nightly"); n.By != "bob" || n.Reason != "quarterly audit <i>freeze</i>" {
		t.Errorf("the store's note of nightly's pause: %+v", n)
	}
	b.open("#/")
	b.wait("the pause in the jobs view", `
		return cell('nightly', 'health') && cell('nightly', 'health').textContent.includes('bob') &&
			cell('nightly', 'health').textContent.includes('quarterly audit <i>freeze</i>') && cell('nightly', 'health').textContent.includes('paused')`)

	// The cluster view: the replica, the duty's leader, the store; a
	// cluster pause asks first.
	b.click("#nav-cluster")
	b.wait("this replica, live, and the duty it leads", `
		const rep = document.querySelector('#replicas-body tr[data-replica="a"]');
		const duty = document.querySelector('#duties-body tr[data-duty="fanout"]');
		return rep && rep.textContent.includes('this replica') && rep.textContent.includes('live') && rep.textContent.includes('fanout') &&
			duty && duty.querySelector('td[data-label="Leader"]').textContent === 'a' && duty.textContent.includes('leading') &&
			document.getElementById('store').textContent.includes('memory') && document.getElementById('store').textContent.includes('ok')`)
	b.shot("cluster")
	b.keys("#cluster-reason", "store failover drill")
	b.click("#cluster-submit")
	b.wait("a confirmation first", `return !document.getElementById('cluster-confirm').hidden`)
	if ps := r.pauses(t); ps.All {
		t.Fatal("the cluster was paused before the confirmation")
	}
	b.click("#cluster-confirm-yes")
	b.wait("the cluster paused, with its note", `
		const p = document.getElementById('cluster-pause').textContent;
		return p.includes('The whole cluster is paused') && p.includes('store failover drill') &&
			document.getElementById('cluster-submit').textContent === 'Resume the cluster'`)
	if ps := r.pauses(t); !ps.All || ps.Notes[""].Reason != "store failover drill" {
		t.Errorf("the store's pauses after the confirmation: %+v", ps)
	}
	b.keys("#cluster-reason", "drill over")
	b.click("#cluster-submit")
	b.wait("the cluster resumed", `return document.getElementById('cluster-pause').textContent.includes('Not paused.')`)

	// A phone: the jobs view stacks its rows and does not scroll sideways.
	b.do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.open("#/")
	b.wait("the jobs view, stacked, within the screen's width", `
		const tr = row('hello');
		return tr && getComputedStyle(tr).display === 'block' &&
			document.documentElement.scrollWidth <= window.innerWidth + 1 &&
			cell('flaky-report', 'last_failure').getBoundingClientRect().right <= window.innerWidth + 1`)
	b.shot("jobs-phone")
	b.check()
}

// newDashboardRig runs a replica with the jobs and the duty the dashboard
// test looks at.
func newDashboardRig(t *testing.T) *rig {
	job := func(name, cron, tz string, fn jobs.Func) engine.JobSpec {
		s := spec(t, name, cron, tz)
		s.Fn = fn
		return s
	}
	slow := job("slow-export", "*/3 * * * * *", "", func(ctx context.Context, _ jobs.Run) error {
		<-ctx.Done()
		return ctx.Err()
	})
	slow.Overlap = policy.OverlapForbid
	slow.Timeout = 10 * time.Minute
	return newRig(t, rigConfig{
		jobs: []engine.JobSpec{
			job("hello", "*/2 * * * * *", "", func(ctx context.Context, run jobs.Run) error {
				time.Sleep(time.Duration(run.Slot.Unix()%4) * 50 * time.Millisecond)
				return nil
			}),
			job("flaky-report", "* * * * * *", "", func(context.Context, jobs.Run) error { return errors.New(hostile) }),
			slow,
			job("paused-sync", "* * * * * *", "", func(context.Context, jobs.Run) error { return nil }),
			job("nightly", "0 3 * * *", "Europe/Berlin", func(context.Context, jobs.Run) error { return nil }),
		},
		duties: []engine.DutySpec{{Name: "fanout", Lease: 3 * time.Second, Fn: func(ctx context.Context, _ jobs.Duty) error {
			<-ctx.Done()
			return nil
		}}},
		before: func(r *rig) {
			if err := r.st.SetPause(context.Background(), slotstore.PauseParams{Job: "paused-sync", Paused: true, By: "alice",
				Reason: "vendor API down <b>bold</b>"}); err != nil {
				t.Fatal(err)
			}
		},
		opts: Options{Token: "s3cret", StoreKind: "memory"},
	})
}

func (r *rig) pauses(t *testing.T) slotstore.Pauses {
	t.Helper()
	ps, err := r.st.Pauses(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func (r *rig) pauseNote(t *testing.T, job string) slotstore.PauseNote {
	return r.pauses(t).Notes[job]
}

// needBrowser skips a test that drives the browser when the tests run
// short or the browser is not installed.
func needBrowser(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	if _, err := exec.LookPath(chromium); err != nil {
		t.Skipf("no %s (scripts/setup.sh installs Debian's chromium): %v", chromium, err)
	}
}

// browse serves r's API and opens a browser on it, both closed when the
// test ends.
func (r *rig) browse(t *testing.T) *browser {
	srv := httptest.NewServer(r.api)
	t.Cleanup(srv.Close)
	return newBrowser(t, srv.URL)
}

// browser is one tab of a headless Chromium of its own.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string
	loads int
	// console collects what the page logged that a test must not see: an
	// uncaught exception, a refusal by the Content-Security-Policy.
	mu      sync.Mutex
	console []string
}

// step bounds every step; waits poll within it.
const step = 30 * time.Second

func newBrowser(t *testing.T, base string) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.Flag("headless", "new"),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, base: base, shots: screenshotDir(t)}
	// Start the browser with no deadline: a deadline on the first call
	// would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Content-Security-Policy") {
				b.mu.Lock()
				b.console = append(b.console, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		<-done
	})
	return b
}

// screenshotDir is $SLOTCRON_SCREENSHOTS, or else the test's artifact
// directory: kept under -outputdir when the test runs with -artifacts,
// removed after it otherwise. Never the source tree.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("SLOTCRON_SCREENSHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots go to %s (keep them with -artifacts, or name a directory in $SLOTCRON_SCREENSHOTS)", abs)
	return abs
}

// do runs actions within one step's time.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	t0 := time.Now()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.dump())
	}
	b.t.Logf("%v: %s", time.Since(t0).Round(time.Millisecond), what)
}

// open loads the page afresh at hash: a query of its own makes each load
// a navigation to a new document, which Navigate waits for.
func (b *browser) open(hash string) {
	b.t.Helper()
	b.loads++
	b.do("open "+hash, chromedp.Navigate(fmt.Sprintf("%s/?load=%d%s", b.base, b.loads, hash)))
}

func (b *browser) click(css string) {
	b.t.Helper()
	b.do("click "+css, chromedp.Click(chromedp.CSS(css)))
}

func (b *browser) keys(css, text string) {
	b.t.Helper()
	b.do("type into "+css, chromedp.Click(chromedp.CSS(css)), chromedp.SendKeys(chromedp.CSS(css), text))
}

// selectValue chooses value in a select, as a person does: it changes.
func (b *browser) selectValue(css, value string) {
	b.t.Helper()
	b.js(`const s = document.querySelector(` + jsString(css) + `); s.value = ` + jsString(value) + `; s.dispatchEvent(new Event('change'));`)
}

func (b *browser) js(code string) {
	b.t.Helper()
	b.do("run "+code, chromedp.Evaluate[chromedp.Void](`(() => { `+code+` })()`))
}

// helpers are the functions every wait may use: row(job) is the job's row
// in the jobs view, cell(job, column) one of its cells.
const helpers = `
	const row = (j) => [...document.querySelectorAll('#jobs-body tr')].find((tr) => tr.dataset.job === j);
	const cell = (j, c) => row(j) && row(j).querySelector('td[data-col="' + c + '"]');`

// noMarkup holds while no markup in a job's error or a pause's reason
// became an element: the hostile error's img, the reasons' b and i.
const noMarkup = `return document.querySelectorAll('img, i').length === 0 &&
	![...document.querySelectorAll('b')].some((e) => e.textContent === 'bold')`

// wait polls the page until body, a function body, returns true.
func (b *browser) wait(what, body string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	expr := `(() => { try {` + helpers + "\n" + body + `
	} catch (e) { return false; } })()`
	t0 := time.Now()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(step))); err != nil {
		b.t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", what, err, b.dump())
	}
	b.t.Logf("%v: %s", time.Since(t0).Round(time.Millisecond), what)
}

// dump is what the page shows, for a failure's message.
func (b *browser) dump() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText`))
	if err != nil {
		return "(could not read the page: " + err.Error() + ")"
	}
	return text
}

// shot saves a full-page PNG of what the page shows now.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// check fails the test for what the page logged that it must not.
func (b *browser) check() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		b.t.Errorf("the page logged: %s", m)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	j, _ := json.Marshal(s)
	return string(j)
}
