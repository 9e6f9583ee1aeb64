package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// catalogConf writes, in dir, a configuration file name on dir's SQLite
// file, with replica, revision (0 for none) and jobs (YAML lines under
// jobs:).
func catalogConf(t *testing.T, dir, name, replica string, revision int, jobs string) string {
	t.Helper()
	rev := ""
	if revision > 0 {
		rev = fmt.Sprintf("revision: %d\n", revision)
	}
	path := filepath.Join(dir, name)
	doc := fmt.Sprintf("replica: %s\n%sstore: {sqlite: {path: %q}}\njobs:\n%s", replica, rev, filepath.Join(dir, "s.db"), jobs)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openStore opens dir's SQLite file on clock (nil for time.Now).
func openStore(t *testing.T, dir string, clock func() time.Time) slotstore.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(dir, "s.db"), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// enrollFile enrolls the jobs of the configuration file at conf in its
// store, on clock, as its replica would at start-up; it returns their specs.
func enrollFile(t *testing.T, conf string, clock func() time.Time) map[string]slotstore.Spec {
	t.Helper()
	v, err := openCatalog(context.Background(), conf, demoRegistry(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	v.st.Close()
	st := openStore(t, filepath.Dir(conf), clock)
	defer st.Close()
	p := slotstore.EnrollParams{Replica: v.replica}
	for _, j := range v.jobs {
		p.Jobs, p.Specs = append(p.Jobs, j.Name), append(p.Specs, v.specs[j.Name])
	}
	if _, err := st.Enroll(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return v.specs
}

const (
	tickEvery2 = "  tick: {run: hello, schedule: \"*/2 * * * * *\"}\n"
	tickEvery3 = "  tick: {run: hello, schedule: \"*/3 * * * * *\"}\n"
	hourly     = "  other: {run: hello, schedule: \"@hourly\"}\n"
	added      = "  added: {run: hello, schedule: \"*/5 * * * * *\"}\n"
)

// diff prints what a file adds, removes and changes, exits 1 then and 0
// with no change, and predicts whether a changed spec takes force as the
// store's rule says: a lower revision does not.
func TestCLIDiff(t *testing.T) {
	dir := t.TempDir()
	a := catalogConf(t, dir, "a.yaml", "r0", 2, tickEvery2+hourly)
	code, stdout, stderr := runCLI(t, "diff", "--config", a)
	if code != ExitFailure || strings.Count(stdout, "added    ") != 2 || stderr != "" {
		t.Errorf("diff before any enrolment: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	enrollFile(t, a, nil)
	if code, stdout, stderr := runCLI(t, "diff", "--config", a); code != ExitOK || !strings.Contains(stdout, "no change") {
		t.Errorf("diff of the file in force: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}

	b := catalogConf(t, dir, "b.yaml", "r1", 1, tickEvery3+added)
	code, stdout, _ = runCLI(t, "diff", "--config", b)
	for _, want := range []string{"added    added: */5 * * * * * (UTC)", "removed  other: @hourly (UTC)", "changed  tick: spec v1:",
		`    schedule: "*/2 * * * * *" → "*/3 * * * * *"`, "    next in force: ", "    next new:      ",
		"would NOT take force: its revision 1 is not above 2", "1 added, 1 removed, 1 changed, 0 unchanged"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, stdout)
		}
	}
	if code != ExitFailure {
		t.Errorf("diff with changes: exit %d, want %d", code, ExitFailure)
	}

	code, stdout, _ = runCLI(t, "diff", "--config", b, "--json", "-n", "4")
	var d catalogDiff
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != ExitFailure {
		t.Fatalf("diff --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if len(d.Added) != 1 || len(d.Removed) != 1 || len(d.Changed) != 1 || d.Unchanged != 0 || d.Revision != 1 {
		t.Fatalf("diff --json: %+v", d)
	}
	c := d.Changed[0]
	if c.Job != "tick" || c.TakesForce == nil || *c.TakesForce || len(c.InForce.Next) != 4 || len(c.New.Next) != 4 ||
		c.InForce.Replica != "r0" || c.InForce.Revision != 2 || len(c.Differences) != 1 {
		t.Errorf("changed: %+v, in force %+v, new %+v", c, c.InForce, c.New)
	}
	for i, s := range c.New.Next {
		if ts, err := time.Parse(time.RFC3339, s); err != nil || ts.Unix()%3 != 0 || i > 0 && s <= c.New.Next[i-1] {
			t.Errorf("new next slot %d = %q: not one of */3, in order", i, s)
		}
	}
	if d.Added[0].TakesForce == nil || !*d.Added[0].TakesForce || d.Removed[0].Job != "other" {
		t.Errorf("added %+v, removed %+v", d.Added[0], d.Removed[0])
	}

	// At a higher revision the change takes force.
	c3 := catalogConf(t, dir, "c.yaml", "r1", 3, tickEvery3+hourly)
	_, stdout, _ = runCLI(t, "diff", "--config", c3, "--json")
	d = catalogDiff{}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || len(d.Changed) != 1 || !*d.Changed[0].TakesForce || d.Unchanged != 1 {
		t.Errorf("diff at revision 3: %v, %+v", err, d)
	}
}

// A job the catalog retired counts as absent: not removed by a file
// without it, added by a file with it.
func TestCLIDiffRetiredIsAbsent(t *testing.T) {
	dir := t.TempDir()
	a := catalogConf(t, dir, "a.yaml", "r0", 0, tickEvery2+hourly)
	enrollFile(t, a, nil)
	st := openStore(t, dir, nil)
	if _, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"other"}, Replica: "r0",
		Specs: []slotstore.Spec{engine.RetiredSpec(0)}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, stdout, _ := runCLI(t, "diff", "--config", catalogConf(t, dir, "b.yaml", "r0", 0, tickEvery2)); code != ExitOK {
		t.Errorf("a file without the retired job: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ := runCLI(t, "diff", "--config", a)
	if code != ExitFailure || !strings.Contains(stdout, "added    other") {
		t.Errorf("a file with the retired job: exit %d:\n%s", code, stdout)
	}
	_, stdout, _ = runCLI(t, "jobs", "--config", a, "--json")
	var l catalogList
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || len(l.Jobs) != 2 || !l.Jobs[0].Retired || l.Jobs[0].Job != "other" {
		t.Errorf("jobs --json: %v, %+v", err, l)
	}
}

// jobs lists each job's spec in force, its source and carriers, the live
// replicas not carrying it, and the file's jobs not enrolled yet.
func TestCLIJobs(t *testing.T) {
	dir := t.TempDir()
	specs := enrollFile(t, catalogConf(t, dir, "a.yaml", "r0", 2, tickEvery2+hourly), nil)
	st := openStore(t, dir, nil)
	if err := st.Beat(context.Background(), slotstore.Beat{Replica: "r9", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b := catalogConf(t, dir, "b.yaml", "r1", 1, tickEvery3+added)
	code, stdout, stderr := runCLI(t, "jobs", "--config", b)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != ExitOK || stderr != "" || len(lines) != 4 || !strings.HasPrefix(lines[0], "JOB ") {
		t.Fatalf("jobs: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	for i, want := range [][]string{
		{"other", "@hourly", "UTC", shortSpec(specs["other"].Fingerprint), "2", "r0", "r9", "absent"},
		{"tick", "*/2 * * * * *", shortSpec(specs["tick"].Fingerprint), "r0", "r9", "other"},
		{"added", "*/5 * * * * *", "(not enrolled)", "only"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %d lacks %q: %q", i+1, w, lines[i+1])
			}
		}
	}
	code, stdout, _ = runCLI(t, "jobs", "--config", b, "--json")
	var l catalogList
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || code != ExitOK {
		t.Fatalf("jobs --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if len(l.Jobs) != 2 || len(l.NotEnrolled) != 1 || l.NotEnrolled[0].Job != "added" {
		t.Fatalf("jobs --json: %+v", l)
	}
	tick := l.Jobs[1]
	if tick.Job != "tick" || tick.Spec != specs["tick"].Fingerprint || tick.Revision != 2 || tick.Replica != "r0" ||
		tick.Since == "" || tick.Retired || strings.Join(tick.Carriers, ",") != "r0" || strings.Join(tick.Others, ",") != "r9" ||
		tick.File != "other" {
		t.Errorf("tick: %+v", tick)
	}
	if code, _, stderr := runCLI(t, "jobs", "--config", b, "extra"); code != ExitUsage || !strings.Contains(stderr, `"extra"`) {
		t.Errorf("jobs extra: exit %d, %q", code, stderr)
	}
}

// audit lists each slot of the window with its fate, counts them, and
// exits 1 while one is unaccounted.
func TestCLIAudit(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	conf := catalogConf(t, dir, "a.yaml", "r0", 0, "  minutely: {run: hello, schedule: \"0 * * * * *\"}\n")
	specs := enrollFile(t, conf, func() time.Time { return base.Add(-10 * time.Minute) })
	ctx := context.Background()
	st := openStore(t, dir, nil)
	fp := specs["minutely"].Fingerprint
	res, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
		{Job: "minutely", Slot: base, Lease: time.Minute, Spec: fp}}})
	if err != nil || res[0].Status != slotstore.Won {
		t.Fatalf("claim: %v, %+v", err, res)
	}
	if err := st.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Skip(ctx, slotstore.SkipParams{Replica: "r1", Requests: []slotstore.SkipRequest{
		{Job: "minutely", Slot: base.Add(time.Minute), Reason: "missed: no replica claimed it in time", Spec: fp}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	at := func(d time.Duration) string { return base.Add(d).Format(time.RFC3339) }
	code, stdout, stderr := runCLI(t, "audit", "--config", conf, "--job", "minutely", "--from", at(0), "--to", at(2*time.Minute))
	for _, want := range []string{"JOB ", "minutely  " + at(0), "done", "succeeded, attempt 1, fence ", "by r1",
		"skipped", "missed: no replica claimed it in time", engine.FateUnaccounted,
		"minutely: 3 slots from " + at(0) + " to " + at(2*time.Minute) + ": 1 done, 1 skipped, 1 unaccounted", "1 job, 1 unaccounted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("audit lacks %q:\n%s", want, stdout)
		}
	}
	if code != ExitFailure || stderr != "" {
		t.Errorf("audit with an unaccounted slot: exit %d, stderr %q", code, stderr)
	}

	code, stdout, _ = runCLI(t, "audit", "--config", conf, "--from", at(0), "--to", at(time.Minute), "--json")
	var r auditReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != ExitOK {
		t.Fatalf("audit --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if len(r.Jobs) != 1 || r.Unaccounted != 0 || r.Counts["done"] != 1 || r.Counts["skipped"] != 1 || len(r.Jobs[0].Slots) != 2 {
		t.Fatalf("audit --json: %+v", r)
	}
	if s := r.Jobs[0].Slots[0]; s.Fate != "done" || s.Outcome != "succeeded" || s.Holder != "r1" || s.Fence == 0 || s.Attempt != 1 || s.Spec != fp {
		t.Errorf("done slot: %+v", s)
	}
	if s := r.Jobs[0].Slots[1]; s.Fate != "skipped" || s.Reason != "missed: no replica claimed it in time" {
		t.Errorf("skipped slot: %+v", s)
	}

	// Relative times: the slots before the catalog's record of the job are
	// before record, not unaccounted.
	code, stdout, _ = runCLI(t, "audit", "--config", conf, "--from", "-50m", "--to", at(-time.Minute), "--json")
	r = auditReport{}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != ExitFailure || r.Counts[engine.FateBeforeRecord] == 0 {
		t.Errorf("audit --from -50m: exit %d, %v, %+v", code, err, r.Counts)
	}
}

// Bad input names what was wrong and exits 2; so does a store that cannot
// be opened, for diff and audit, whose exit 1 says what they found.
func TestCLICatalogErrors(t *testing.T) {
	dir := t.TempDir()
	conf := catalogConf(t, dir, "a.yaml", "r0", 0, tickEvery2)
	enrollFile(t, conf, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit"}, "--from is required"},
		{[]string{"audit", "--from", "yesterday"}, `--from "yesterday"`},
		{[]string{"audit", "--from", "-1h", "--to", "-2h"}, "is before --from"},
		{[]string{"audit", "--from", "-1h", "--job", "nope"}, `--job "nope": no such job`},
		{[]string{"audit", "--from", "-1h", "--to", "-2x"}, `--to "-2x"`},
		{[]string{"diff", "-n", "0"}, "-n 0"},
		{[]string{"diff", "--bogus"}, "-bogus"},
		{[]string{"jobs", "--json=maybe"}, "-json"},
	} {
		code, _, stderr := runCLI(t, append(tc.args, "--config", conf)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	notDir := filepath.Join(dir, "a.yaml", "s.db") // a.yaml is a file
	broken := filepath.Join(dir, "broken.yaml")
	doc := fmt.Sprintf("store: {sqlite: {path: %q}}\njobs:\n%s", notDir, tickEvery2)
	if err := os.WriteFile(broken, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"diff"}, {"audit", "--from", "-1h"}} {
		code, stdout, stderr := runCLI(t, append(args, "--config", broken)...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "scheduler "+args[0]+": ") {
			t.Errorf("%q on a store that cannot open: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// A window reaching beyond the history a job keeps says where it ends, and
// its slots with no marker before then are beyond history, not
// unaccounted.
func TestCLIAuditBeyondHistory(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	conf := catalogConf(t, dir, "a.yaml", "r0", 0,
		"  brief: {run: hello, schedule: \"0 * * * * *\", history: 10m, starting_deadline: 10s, lease: 10s}\n")
	enrollFile(t, conf, func() time.Time { return base.Add(-10 * time.Minute) })
	to := base.Add(5 * time.Minute).Format(time.RFC3339)
	code, stdout, _ := runCLI(t, "audit", "--config", conf, "--from", base.Format(time.RFC3339), "--to", to)
	if code != ExitOK || !strings.Contains(stdout, "brief: 6 slots from ") || !strings.Contains(stdout, "6 beyond history") ||
		!strings.Contains(stdout, "brief: history is kept from ") {
		t.Errorf("audit beyond history: exit %d:\n%s", code, stdout)
	}
}

func TestParseWhenAt(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"now": now, "-2h": now.Add(-2 * time.Hour), "-90m": now.Add(-90 * time.Minute),
		"2026-12-01T00:00:00Z": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "2026-12-01": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := parseWhenAt(in, time.UTC, now); err != nil || !got.Equal(want) {
			t.Errorf("parseWhenAt(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "-2", "2h", "yesterday"} {
		if _, err := parseWhenAt(in, time.UTC, now); err == nil {
			t.Errorf("parseWhenAt(%q): no error", in)
		}
	}
}

// A job kept 1h of history, and was removed (retired) 5 days ago. Its
// slots of 9 days ago, whose markers were pruned long since, are beyond
// history, not unaccounted: audit exits 0.
func TestCLIAuditRetiredJobBeyondHistory(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().UTC().Truncate(time.Hour)
	conf := catalogConf(t, dir, "a.yaml", "r0", 0, "  brief: {run: hello, schedule: \"@hourly\", history: 1h}\n")
	enrollFile(t, conf, func() time.Time { return base.Add(-10 * 24 * time.Hour) })
	st := openStore(t, dir, func() time.Time { return base.Add(-5 * 24 * time.Hour) })
	if _, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"brief"}, Replica: "r0",
		Specs: []slotstore.Spec{engine.RetiredSpec(0)}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	from := base.Add(-9 * 24 * time.Hour)
	code, stdout, stderr := runCLI(t, "audit", "--config", conf, "--from", from.Format(time.RFC3339), "--to", from.Add(2*time.Hour).Format(time.RFC3339))
	t.Logf("exit %d\n%s%s", code, stdout, stderr)
	if code != ExitOK {
		t.Errorf("audit of slots 9 days old of a job that kept 1h of history: exit %d", code)
	}
}

// A new spec took force half a second after a slot: audit lists the slot
// once, under the old spec.
func TestCLIAuditSlotAtSpecChangeOnce(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	a := catalogConf(t, dir, "a.yaml", "r0", 1, "  m: {run: hello, schedule: \"0 * * * * *\"}\n")
	enrollFile(t, a, func() time.Time { return base.Add(-time.Hour) })
	b := catalogConf(t, dir, "b.yaml", "r1", 2, "  m: {run: hello, schedule: \"0 * * * * *\", timeout: 5m}\n")
	enrollFile(t, b, func() time.Time { return base.Add(500 * time.Millisecond) })
	code, stdout, _ := runCLI(t, "audit", "--config", b, "--from", base.Add(-time.Minute).Format(time.RFC3339), "--to", base.Add(time.Minute).Format(time.RFC3339))
	t.Logf("exit %d\n%s", code, stdout)
	if strings.Count(stdout, base.Format(time.RFC3339)+"  ") != 1 {
		t.Errorf("slot %s listed %d times", base.Format(time.RFC3339), strings.Count(stdout, base.Format(time.RFC3339)+"  "))
	}
}
