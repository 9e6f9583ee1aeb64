package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// POST /api/jobs/{job}/backfill previews with dry_run (200) and starts the
// slots that never ran (202); its errors map to codes as a trigger's do.
func TestBackfillEndpoint(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]bool{}
	hourly := spec(t, "hourly", "0 * * * *", "")
	hourly.Fn = func(_ context.Context, run jobs.Run) error {
		mu.Lock()
		ran[run.Key()] = true
		mu.Unlock()
		return nil
	}
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{hourly, spec(t, "other", never, "")},
		// The store's record of the job begins six hours ago, so the
		// slots since are ones it can vouch never ran: the engine's
		// start-up records them missed, and a backfill runs them.
		before: func(r *rig) {
			r.lag.Store(int64(6 * time.Hour))
			r.enroll(t, "hourly")
			r.lag.Store(0)
		}})

	now := time.Now()
	from, to := now.Add(-5*time.Hour), now.Add(-2*time.Hour)
	var want []string
	for s := hourly.Schedule.Next(from.Add(-time.Second)); !s.After(to); s = hourly.Schedule.Next(s) {
		want = append(want, "hourly@"+s.UTC().Format(time.RFC3339))
	}
	const missed = "missed: no replica claimed it in time"
	poll.Until(t, 10*time.Second, fmt.Sprintf("the start-up to record %v missed", want), func() error {
		var p historyPage
		r.get(t, "/api/jobs/hourly/history", &p)
		n := 0
		for _, s := range p.Slots {
			if slices.Contains(want, s.Key) && s.State == "skipped" && s.Reason == missed {
				n++
			}
		}
		if n != len(want) {
			return fmt.Errorf("%d recorded: %+v", n, p.Slots)
		}
		return nil
	})
	rng := fmt.Sprintf(`"from": %q, "to": %q`, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	post := func(body string) (int, backfillView, string) {
		t.Helper()
		code, _, raw := r.do(t, "POST", "/api/jobs/hourly/backfill", body, true)
		var v backfillView
		if code < 300 {
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
		}
		return code, v, raw
	}

	for _, c := range []struct {
		what, body, code string
		status           int
		says             []string
	}{
		{"no from", `{"to": "2026-01-01T00:00:00Z"}`, codeBadRequest, 400, []string{"from is required"}},
		{"a bad to", `{"from": "2026-01-01T00:00:00Z", "to": "tomorrow"}`, codeBadRequest, 400, []string{`to "tomorrow"`, "RFC 3339"}},
		{"a bad dry_run", `{` + rng + `, "dry_run": "maybe"}`, codeBadRequest, 400, []string{"dry_run"}},
		{"a dry_run given null", `{` + rng + `, "dry_run": null}`, codeBadRequest, 400, []string{"dry_run is given empty"}},
		{"a dry_run that is a number", `{` + rng + `, "dry_run": 1}`, codeBadRequest, 400, []string{`body field "dry_run": want true or false, not the number 1`}},
		{"a from that is a number", `{"from": 20260101}`, codeBadRequest, 400, []string{`body field "from": want a string, not the number 20260101`}},
		{"an empty to", `{"from": "2026-01-01T00:00:00Z", "to": null}`, codeBadRequest, 400, []string{"to is empty; leave it out to backfill up to now"}},
		{"a range in the future", fmt.Sprintf(`{"from": %q, "to": %q}`, now.Add(time.Hour).UTC().Format(time.RFC3339), now.Add(2*time.Hour).UTC().Format(time.RFC3339)),
			codeBadRange, 400, []string{"bad backfill range"}},
		{"too many slots", fmt.Sprintf(`{"from": %q, "to": %q}`, now.Add(-50*24*time.Hour).UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)),
			codeBadRange, 400, []string{"bad backfill range"}},
	} {
		code, _, raw := post(c.body)
		wantError(t, c.what, code, raw, c.status, c.code, c.says...)
	}
	code, _, raw := r.do(t, "POST", "/api/jobs/nope/backfill", `{`+rng+`}`, true)
	wantError(t, "an unknown job", code, raw, http.StatusNotFound, codeNoJob, `"nope"`)
	code, _, raw = r.do(t, "POST", "/api/jobs/hourly/backfill", `{`+rng+`}`, false)
	wantError(t, "no token", code, raw, http.StatusUnauthorized, codeUnauthorized)

	// A dry run plans, and runs nothing.
	code, plan, raw := post(`{` + rng + `, "dry_run": true}`)
	if code != http.StatusOK || !plan.DryRun || plan.Started || plan.ToRun != len(want) || len(plan.Slots) != len(want) {
		t.Fatalf("dry run: %d %s, want 200 planning %v", code, raw, want)
	}
	for i, s := range plan.Slots {
		if s.Key != want[i] || s.Action != engine.BackfillRun || s.State != "skipped" || s.Reason != missed {
			t.Errorf("dry run slot %d: %+v, want %s, recorded missed, to run", i, s, want[i])
		}
	}
	// to left out is now, as the CLI's --to.
	code, plan, raw = post(fmt.Sprintf(`{"from": %q, "dry_run": true}`, from.UTC().Format(time.RFC3339)))
	upTo := plan.ToRequested
	if upTo == "" {
		upTo = plan.To
	}
	if at, err := time.Parse(time.RFC3339, upTo); code != http.StatusOK || err != nil || time.Since(at) > time.Minute || len(plan.Slots) < len(want) {
		t.Errorf("dry run without to: %d %s, want 200 planning up to now", code, raw)
	}
	// The query string works as the body does.
	code, _, raw = r.do(t, "POST", "/api/jobs/hourly/backfill?dry_run=1&from="+from.UTC().Format(time.RFC3339)+"&to="+to.UTC().Format(time.RFC3339), "", true)
	if code != http.StatusOK {
		t.Errorf("dry run in the query: %d %s", code, raw)
	}

	// A paused job is refused.
	if err := r.st.SetPause(t.Context(), slotstore.PauseParams{Job: "hourly", Paused: true, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	code, _, raw = post(`{` + rng + `}`)
	wantError(t, "a paused job", code, raw, http.StatusConflict, codePaused, "hourly")
	if err := r.st.SetPause(t.Context(), slotstore.PauseParams{Job: "hourly"}); err != nil {
		t.Fatal(err)
	}

	// Started: 202, and the slots run.
	code, plan, raw = post(`{` + rng + `}`)
	if code != http.StatusAccepted || !plan.Started || plan.DryRun || plan.ToRun != len(want) {
		t.Fatalf("backfill: %d %s, want 202 running %v", code, raw, want)
	}
	poll.Until(t, 20*time.Second, fmt.Sprintf("every slot of %v to succeed", want), func() error {
		var p historyPage
		r.get(t, "/api/jobs/hourly/history?outcome=succeeded", &p)
		done := 0
		for _, s := range p.Slots {
			for _, w := range want {
				if s.Key == w {
					done++
				}
			}
		}
		if done != len(want) {
			return fmt.Errorf("%d succeeded: %+v", done, p.Slots)
		}
		return nil
	})
	mu.Lock()
	for _, w := range want {
		if !ran[w] {
			t.Errorf("%s did not run", w)
		}
	}
	mu.Unlock()
	// Again: nothing left to run, so nothing starts.
	code, plan, raw = post(`{` + rng + `}`)
	if code != http.StatusOK || plan.Started || plan.ToRun != 0 || plan.Slots[0].Action != engine.BackfillLeave || plan.Slots[0].State != "done" {
		t.Errorf("a second backfill: %d %s, want 200 leaving every slot", code, raw)
	}

	r.stop()
	code, _, raw = post(`{` + rng + `}`)
	wantError(t, "a stopped scheduler", code, raw, http.StatusServiceUnavailable, codeNotRunning)
}

// A backfill's answer echoes the range it planned: a to whose newest slots
// may still start on schedule is answered with the last slot planned, and
// the to asked for beside it.
func TestBackfillPlannedRange(t *testing.T) {
	often := spec(t, "often", "*/10 * * * * *", "")
	r := newRig(t, rigConfig{jobs: []engine.JobSpec{often},
		before: func(r *rig) { r.lag.Store(int64(time.Hour)) }})
	r.enroll(t, "often")
	r.lag.Store(0)
	now := time.Now().UTC().Truncate(time.Second)
	for _, c := range []struct {
		what     string
		from, to time.Time
		capped   bool
	}{
		{"a range long past", now.Add(-10 * time.Minute), now.Add(-5 * time.Minute), false},
		{"a range up to now", now.Add(-10 * time.Minute), now, true},
	} {
		code, _, raw := r.do(t, "POST", "/api/jobs/often/backfill", fmt.Sprintf(`{"from": %q, "to": %q, "dry_run": true}`,
			c.from.Format(time.RFC3339), c.to.Format(time.RFC3339)), true)
		var v backfillView
		if err := json.Unmarshal([]byte(raw), &v); err != nil || code != http.StatusOK || len(v.Slots) == 0 {
			t.Fatalf("%s: %d %s", c.what, code, raw)
		}
		last := v.Slots[len(v.Slots)-1].Slot
		want, wantAsked := c.to.Format(time.RFC3339), ""
		if c.capped {
			want, wantAsked = last, c.to.Format(time.RFC3339)
		}
		if v.From != c.from.Format(time.RFC3339) || v.To != want || v.ToRequested != wantAsked {
			t.Errorf("%s: from %s to %s (asked %q), last slot %s; want to %s, asked %q", c.what, v.From, v.To, v.ToRequested, last, want, wantAsked)
		}
	}
}
