package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// TestCLIActions: each of the ten kinds of action on a SQLite store — a
// replica's configuration taking effect as it runs; through the CLI, pause
// and resume of a job and of the cluster, trigger, backfill, a schedule's
// create, put, pause, resume and delete — appears once in `scheduler
// actions --json`, newest first, with who, via, what, on what, why and how
// it ended; the filters and paging select from it.
func TestCLIActions(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	doc := "store: {sqlite: {path: " + filepath.Join(dir, "s.db") + "}}\nactions_history: 48h\n" +
		"jobs: {hello: {schedule: '@every 1h'}}\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// A replica runs a moment: its revision takes effect.
	loaded, err := loadConfig(context.Background(), cfg, demoRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(loaded, demoRegistry(), WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, s)
	// Run records it before it schedules anything, once it holds its
	// store; stop waits for Run. Reading the log meanwhile would open the
	// file beside it.
	poll.Until(t, 10*time.Second, "the replica to run", func() error {
		if s.runStore.Load() == nil {
			return errors.New("no store yet")
		}
		return nil
	})
	stop()
	from := time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
	steps := [][]string{
		{"pause", "--reason", "db migration", "--by", "ops-anna", "hello"},
		{"resume", "--reason", "migrated", "--by", "ops-anna", "hello"},
		{"pause", "--reason", "freeze", "--by", "ops-ben"},
		{"resume", "--reason", "thaw", "--by", "ops-ben"},
		{"trigger", "hello"},
		{"backfill", "--from", from, "hello"},
		{"schedules", "put", "--create", "--job", "hello", "--schedule", "0 9 * * *", "tenant-1"},
		{"schedules", "put", "--job", "hello", "--schedule", "0 10 * * *", "tenant-1"},
		{"schedules", "pause", "--reason", "on hold", "tenant-1"},
		{"schedules", "resume", "tenant-1"},
		{"schedules", "delete", "tenant-1"},
	}
	for _, s := range steps {
		args := append([]string{s[0]}, append([]string{"--config", cfg}, s[1:]...)...)
		if s[0] == "schedules" {
			args = append([]string{s[0], s[1], "--config", cfg}, s[2:]...)
		}
		if code, out, errs := runCLI(t, args...); code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", s, code, out, errs)
		}
	}
	code, out, errs := runCLI(t, "actions", "--config", cfg, "--json", "-n", "100")
	if code != ExitOK {
		t.Fatalf("actions: exit %d\n%s%s", code, out, errs)
	}
	var got []admin.ActionView
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var a admin.ActionView
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, a)
	}
	want := []string{ // oldest first: kind target who reason result
		"config  slotcron  ok",
		"pause hello ops-anna db migration ok",
		"resume hello ops-anna migrated ok",
		"pause  ops-ben freeze ok",
		"resume  ops-ben thaw ok",
		"trigger hello cli  ok",
		"backfill hello cli  ok",
		"schedule-create tenant-1 cli  ok",
		"schedule-put tenant-1 cli  ok",
		"schedule-pause tenant-1 cli on hold ok",
		"schedule-resume tenant-1 cli  ok",
		"schedule-delete tenant-1 cli  ok",
	}
	if len(got) != len(want) {
		t.Fatalf("%d actions, want %d:\n%s", len(got), len(want), out)
	}
	for i, w := range want {
		a := got[len(got)-1-i]
		who := a.Who
		if strings.HasPrefix(who, "cli ") {
			who = "cli"
		}
		if line := fmt.Sprintf("%s %s %s %s %s", a.Kind, a.Target, who, a.Reason, a.Result); line != w {
			t.Errorf("action %d: %q, want %q (%+v)", i, line, w, a)
		}
		if via := map[bool]string{true: "slotcron", false: "cli"}[i == 0]; a.Via != via || a.Seq == 0 || a.At == "" {
			t.Errorf("action %d: via %q seq %d at %q", i, a.Via, a.Seq, a.At)
		}
		if i > 0 && a.Seq <= got[len(got)-i].Seq {
			t.Errorf("action %d: seq %d not above the one before", i, a.Seq)
		}
	}
	if d := got[len(got)-6].Detail; !strings.Contains(d, "fence") || !strings.Contains(d, "ended succeeded") {
		t.Errorf("the trigger's detail: %q", d)
	}
	if d := got[len(got)-8].Detail; !strings.Contains(d, "version 1") {
		t.Errorf("the create's detail: %q", d)
	}
	kinds := map[string]bool{}
	for _, a := range got {
		kinds[a.Kind] = true
	}
	if len(kinds) != 10 {
		t.Errorf("%d kinds of action, want the ten: %v", len(kinds), kinds)
	}
	// Filters and pages.
	if code, out, _ = runCLI(t, "actions", "--config", cfg, "--json", "--who", "ops-ben"); code != ExitOK || strings.Count(out, "\n") != 2 {
		t.Errorf("--who ops-ben: exit %d\n%s", code, out)
	}
	if code, out, _ = runCLI(t, "actions", "--config", cfg, "--json", "--kind", "schedule-put", "--target", "tenant-1"); code != ExitOK ||
		strings.Count(out, "\n") != 1 {
		t.Errorf("--kind schedule-put --target tenant-1: exit %d\n%s", code, out)
	}
	before := fmt.Sprint(got[2].Seq)
	if code, out, _ = runCLI(t, "actions", "--config", cfg, "--json", "--before", before, "-n", "3"); code != ExitOK ||
		strings.Count(out, "\n") != 3 || !strings.Contains(out, fmt.Sprintf(`"seq":%d`, got[3].Seq)) {
		t.Errorf("--before %s -n 3: exit %d\n%s", before, code, out)
	}
	if code, out, _ = runCLI(t, "actions", "--config", cfg); code != ExitOK || !strings.Contains(out, "SEQ") ||
		!strings.Contains(out, "db migration") {
		t.Errorf("the table: exit %d\n%s", code, out)
	}
	if code, _, errs = runCLI(t, "actions", "--config", cfg, "--since", "yesterday"); code != ExitUsage || !strings.Contains(errs, "--since") {
		t.Errorf("a bad --since: exit %d %s", code, errs)
	}
}

// TestGoAPIActions: a write through the Go API is recorded as made by its
// writer (By) via go; a context that carries an actor — the CLI's user,
// the HTTP API's caller — names that actor instead.
func TestGoAPIActions(t *testing.T) {
	st, _, reg := rig(&recorder{}, "hello")
	scs := NewSchedules(st, nil, reg).By("billing-svc")
	ctx := context.Background()
	if _, err := scs.Put(ctx, Schedule{ID: "t1", Job: "hello", Schedule: "@hourly"}); err != nil {
		t.Fatal(err)
	}
	if err := scs.Delete(engine.WithActor(ctx, engine.Actor{Who: "ci-bot", Role: "admin", Via: "http"}), "t1", 0); err != nil {
		t.Fatal(err)
	}
	as, err := st.Actions(ctx, slotstore.ActionsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range as {
		got = append(got, strings.Join([]string{a.Kind, a.Target, a.Who, a.Role, a.Via, a.Result}, "|"))
	}
	want := "schedule-delete|t1|ci-bot|admin|http|ok\nschedule-put|t1|billing-svc||go|ok"
	if strings.Join(got, "\n") != want {
		t.Errorf("the actions log:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}
