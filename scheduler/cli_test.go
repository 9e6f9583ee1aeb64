package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Command(context.Background(), args, &out, &errb, demoRegistry())
	return code, out.String(), errb.String()
}

func TestCLIValidate(t *testing.T) {
	code, _, stderr := runCLI(t, "validate", "--config", "testdata/bad.yaml")
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 5 {
		t.Fatalf("stderr has %d lines, want 4 errors and a summary:\n%s", len(lines), stderr)
	}
	for i, line := range []string{":8: ", ":11: ", ":15: ", ":16: "} {
		if !strings.HasPrefix(lines[i], "testdata/bad.yaml"+line) {
			t.Errorf("line %d = %q, want prefix testdata/bad.yaml%s", i, lines[i], line)
		}
	}
	code, stdout, _ := runCLI(t, "validate", "--config", "../config.example.yaml")
	if code != ExitOK || !strings.Contains(stdout, "ok") {
		t.Errorf("example config: exit %d, %q", code, stdout)
	}
	if code, _, stderr := runCLI(t, "validate", "--config", "testdata/missing.yaml"); code != ExitUsage || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
}

func TestCLIUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"next"}, {"next", "--schedule", "@hourly", "-n", "0"}, {"validate", "extra"}, {"run", "--bogus"}} {
		if code, _, _ := runCLI(t, args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
	}
	if code, stdout, _ := runCLI(t, "help"); code != ExitOK || !strings.Contains(stdout, "validate") {
		t.Errorf("help: exit %d", code)
	}
}

// next for 30 2 * * * in Europe/Berlin across both 2026 transitions fires
// once per local day, at the first instant after the spring gap and at the
// first of the two autumn 02:30s; each line shows the slot in UTC, then in
// the schedule's zone.
func TestCLINextAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"2026-03-27T12:00:00Z", []string{
			"2026-03-28T01:30:00Z  2026-03-28T02:30:00+01:00 Europe/Berlin",
			"2026-03-29T01:00:00Z  2026-03-29T03:00:00+02:00 Europe/Berlin",
			"2026-03-30T00:30:00Z  2026-03-30T02:30:00+02:00 Europe/Berlin",
		}},
		{"2026-10-23T12:00:00Z", []string{
			"2026-10-24T00:30:00Z  2026-10-24T02:30:00+02:00 Europe/Berlin",
			"2026-10-25T00:30:00Z  2026-10-25T02:30:00+02:00 Europe/Berlin",
			"2026-10-26T01:30:00Z  2026-10-26T02:30:00+01:00 Europe/Berlin",
		}},
	} {
		code, stdout, stderr := runCLI(t, "next", "--schedule", "30 2 * * *", "--timezone", "Europe/Berlin", "-n", "3", "--from", tc.from)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got := strings.Split(strings.TrimSpace(stdout), "\n"); !slices.Equal(got, tc.want) {
			t.Errorf("from %s:\n%s\nwant\n%s", tc.from, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	// In UTC, the UTC instant is all there is to say.
	code, stdout, _ := runCLI(t, "next", "--schedule", "@daily", "-n", "1", "--from", "2026-03-27T12:00:00Z")
	if code != ExitOK || stdout != "2026-03-28T00:00:00Z\n" {
		t.Errorf("next in UTC: exit %d, %q", code, stdout)
	}
}

func TestCLINextJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "next", "--config", "../config.example.yaml", "--job", "hello", "-n", "3",
		"--from", "2026-11-29T02:00:03Z", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), stdout)
	}
	want := time.Date(2026, 11, 29, 2, 0, 10, 0, time.UTC)
	for _, line := range lines {
		var v struct{ Job, Slot, Local, Timezone, Key string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if v.Job != "hello" || v.Slot != want.Format(time.RFC3339) || v.Key != "hello@"+v.Slot ||
			v.Timezone != "UTC" || v.Local != v.Slot {
			t.Errorf("line %q, want slot %v in UTC", line, want)
		}
		want = want.Add(10 * time.Second)
	}
	if code, _, stderr := runCLI(t, "next", "--config", "../config.example.yaml", "--job", "nope"); code != ExitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown job: exit %d %q", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "next", "--config", "../config.example.yaml", "--job", "nightly-sleep", "-n", "1",
		"--from", "2026-03-28T12:00:00Z", "--json")
	var v struct{ Slot, Local, Timezone string }
	if err := json.Unmarshal([]byte(stdout), &v); code != ExitOK || err != nil || v.Slot != "2026-03-29T01:00:00Z" ||
		v.Local != "2026-03-29T03:00:00+02:00" || v.Timezone != "Europe/Berlin" {
		t.Errorf("nightly-sleep: exit %d, %v, %q %s", code, err, stdout, stderr)
	}
}

// @every slots do not depend on when a process starts.
func TestCLINextEveryIsAnchored(t *testing.T) {
	_, a, _ := runCLI(t, "next", "--schedule", "@every 7s", "-n", "4", "--from", "2026-11-29T10:00:00Z")
	_, b, _ := runCLI(t, "next", "--schedule", "@every 7s", "-n", "3", "--from", "2026-11-29T10:00:03Z")
	al, bl := strings.Fields(a), strings.Fields(b)
	if len(al) != 4 || len(bl) != 3 {
		t.Fatalf("%q / %q", a, b)
	}
	// Both start from the first multiple of 7 s after their --from.
	if strings.Join(al[len(al)-3:], " ") != strings.Join(bl, " ") && strings.Join(al[:3], " ") != strings.Join(bl, " ") {
		t.Errorf("slots differ: %v vs %v", al, bl)
	}
	for _, s := range al {
		ts, _ := time.Parse(time.RFC3339, s)
		if ts.Unix()%7 != 0 {
			t.Errorf("slot %s is not a multiple of 7 s since the epoch", s)
		}
	}
}

func TestCLIHistory(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "c.yaml")
	doc := "store: {sqlite: {path: " + filepath.Join(dir, "s.db") + "}}\njobs: {hello: {schedule: '@hourly'}}\n"
	if err := os.WriteFile(conf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(dir, "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Date(2100, 11, 29, 2, 0, 0, 0, time.UTC)
	res, err := st.Claim(context.Background(), slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{{Job: "hello", Slot: slot, Lease: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Finish(context.Background(), slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Failed, Error: "boom", Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, stdout, stderr := runCLI(t, "history", "--config", conf)
	if code != ExitOK || !strings.Contains(stdout, "hello") || !strings.Contains(stdout, "2100-11-29T02:00:00Z") ||
		!strings.Contains(stdout, "failed") || !strings.Contains(stdout, "boom") {
		t.Errorf("history: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "history", "--config", conf, "--json", "--job", "hello", "--state", "done")
	var v admin.MarkerView
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &v); code != ExitOK || err != nil ||
		v.Key != "hello@2100-11-29T02:00:00Z" || v.Outcome != "failed" || v.Holder != "r1" || v.Duration != 1 {
		t.Errorf("history --json: exit %d, %v, %+v", code, err, v)
	}
	if code, _, _ := runCLI(t, "history", "--config", conf, "--state", "weird"); code != ExitUsage {
		t.Errorf("bad state: exit %d", code)
	}
	if code, _, stderr := runCLI(t, "history", "--config", conf, "--job", "nope"); code != ExitUsage || !strings.Contains(stderr, `no job or schedule "nope"`) {
		t.Errorf("unknown job: exit %d, %q", code, stderr)
	}
}

func TestCLIPauseResumeTrigger(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "c.yaml")
	doc := "store: {sqlite: {path: " + filepath.Join(dir, "s.db") + "}}\njobs: {hello: {schedule: '@daily'}}\n"
	if err := os.WriteFile(conf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each line of the table of pauses: what, since when, by whom, why.
	pauseRow := regexp.MustCompile(`(?m)^(\S+(?: cluster\))?) +(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) +(.+?) {2,}(.+)$`)
	rows := func(stdout string) map[string][]string {
		out := map[string][]string{}
		for _, m := range pauseRow.FindAllStringSubmatch(stdout, -1) {
			out[m[1]] = m[2:]
		}
		return out
	}
	code, stdout, stderr := runCLI(t, "pause", "--config", conf, "--reason", "deploy freeze", "--by", "alice", "hello")
	if r := rows(stdout)["hello"]; code != ExitOK || r == nil || r[1] != "alice" || r[2] != "deploy freeze" ||
		!strings.HasPrefix(stdout, "paused hello, by alice: deploy freeze\n") {
		t.Errorf("pause hello: exit %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "pause", "--config", conf, "--reason", "db migration")
	if r := rows(stdout); code != ExitOK || r[clusterPause] == nil || r[clusterPause][1] != defaultBy() ||
		r[clusterPause][2] != "db migration" || r["hello"] == nil {
		t.Errorf("pause cluster: exit %d %q", code, stdout)
	}
	if code, stdout, _ := runCLI(t, "resume", "--config", conf, "--reason", "migrated"); code != ExitOK ||
		rows(stdout)[clusterPause] != nil || rows(stdout)["hello"] == nil {
		t.Errorf("resume cluster: exit %d %q", code, stdout)
	}
	// The store keeps who and why.
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(dir, "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := st.Pauses(context.Background())
	st.Close()
	if n := ps.Notes["hello"]; err != nil || n.By != "alice" || n.Reason != "deploy freeze" || n.At.IsZero() {
		t.Errorf("the store's note of hello's pause: %+v, %v", ps.Notes, err)
	}
	if code, stdout, _ := runCLI(t, "resume", "hello", "--config", conf, "--reason", "frozen no more"); code != ExitOK ||
		stdout != "resumed hello, by "+defaultBy()+": frozen no more\nnothing is paused\n" {
		t.Errorf("resume hello: exit %d %q", code, stdout)
	}
	// Resuming what is not paused is no error, and does not claim to
	// have resumed it.
	for _, args := range [][]string{{"hello"}, nil} {
		what := "the whole cluster"
		if args != nil {
			what = args[0]
		}
		code, stdout, _ := runCLI(t, append([]string{"resume", "--config", conf, "--reason", "again"}, args...)...)
		if code != ExitOK || stdout != what+" was not paused; nothing to resume\nnothing is paused\n" {
			t.Errorf("resume of %s, not paused: exit %d %q", what, code, stdout)
		}
	}
	if code, _, _ := runCLI(t, "pause", "--config", conf, "--reason", "x", "nope"); code != ExitUsage {
		t.Errorf("pause of an unknown job: exit %d", code)
	}
	if code, _, stderr := runCLI(t, "trigger", "hello", "--config", conf, "extra"); code != ExitUsage || !strings.Contains(stderr, "exactly one job") {
		t.Errorf("trigger of two jobs: exit %d %q", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "trigger", "hello", "--config", conf) // flags after the job
	if code != ExitOK || !strings.Contains(stdout, ": succeeded") {
		t.Errorf("trigger: exit %d %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "history", "--config", conf, "--json"); code != ExitOK || !strings.Contains(stdout, `"manual":true`) {
		t.Errorf("history after trigger: %q", stdout)
	}
}

// pause and resume want a reason, and a --by that says who; nothing is
// paused without them.
func TestCLIPauseNeedsReason(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "c.yaml")
	doc := "store: {sqlite: {path: " + filepath.Join(dir, "s.db") + "}}\njobs: {hello: {schedule: '@daily'}}\n"
	if err := os.WriteFile(conf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pause", "hello"}, "pause: --reason is required"},
		{[]string{"pause", "--reason", " \t"}, "pause: --reason is required"},
		{[]string{"resume", "hello"}, "resume: --reason is required"},
		{[]string{"pause", "--reason", "x", "--by", ""}, "pause: --by is empty"},
		{[]string{"pause", "--reason", strings.Repeat("x", maxPauseNote+1)}, "pause: --reason is 1001 bytes; at most 1000"},
		{[]string{"resume", "--reason", "x", "--by", strings.Repeat("x", maxPauseNote+1)}, "resume: --by is 1001 bytes"},
	} {
		code, _, stderr := runCLI(t, append(c.args, "--config", conf)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "help "+c.args[0]) {
			t.Errorf("%q: exit %d %q, want %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
	if code, stdout, _ := runCLI(t, "pause", "--config", conf, "--reason", "x"); code != ExitOK || !strings.Contains(stdout, clusterPause) {
		t.Errorf("pause with a reason: exit %d %q", code, stdout)
	}
	if by := defaultBy(); !regexp.MustCompile(`^cli \S+@\S+$`).MatchString(by) {
		t.Errorf("default --by %q, want cli user@host", by)
	}
}

// Flags may follow the positional arguments; after "--" all are positional.
func TestParseFlagsArgs(t *testing.T) {
	for _, c := range []struct {
		args, pos []string
		config    string
	}{
		{[]string{"--config", "x", "hello"}, []string{"hello"}, "x"},
		{[]string{"hello", "--config", "x"}, []string{"hello"}, "x"},
		{[]string{"a", "--config=x", "b"}, []string{"a", "b"}, "x"},
		{[]string{"a", "--", "--config", "y"}, []string{"a", "--config", "y"}, "slotcron.yaml"},
		{nil, nil, "slotcron.yaml"},
	} {
		t.Setenv("SLOTCRON_CONFIG", "")
		fs, path := newFlags("t", io.Discard)
		pos, err := parseFlagsArgs(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *path != c.config {
			t.Errorf("%q: %q, config %q, %v; want %q, config %q", c.args, pos, *path, err, c.pos, c.config)
		}
	}
}

// version prints the build; help CMD and CMD -h print the command's flags
// on stdout, since they were asked for.
func TestCLIVersionAndHelp(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if code, stdout, _ := runCLI(t, args...); code != ExitOK || !strings.HasPrefix(stdout, "slotcron ") || !strings.Contains(stdout, "go1.") {
			t.Errorf("%q: exit %d %q", args, code, stdout)
		}
	}
	for _, args := range [][]string{{"help", "trigger"}, {"trigger", "-h"}, {"history", "--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != ExitOK || !strings.Contains(stdout, "-config") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// Every command's help starts with its usage line; a command that takes a
// job names JOB there and says what a JOB is.
func TestCLIHelpNamesJob(t *testing.T) {
	for _, c := range []struct {
		cmd, usage string
		job        bool
	}{
		{"run", "usage: scheduler run [flags]\n", false},
		{"validate", "usage: scheduler validate [flags]\n", false},
		{"next", "usage: scheduler next [flags] --job JOB | --schedule SPEC\n", true},
		{"history", "usage: scheduler history [flags] [--job JOB]\n", true},
		{"trigger", "usage: scheduler trigger [flags] JOB\n", true},
		{"pause", "usage: scheduler pause [flags] --reason TEXT [JOB]\n", true},
		{"resume", "usage: scheduler resume [flags] --reason TEXT [JOB]\n", true},
		{"diff", "usage: scheduler diff [flags]\n", false},
		{"jobs", "usage: scheduler jobs [flags]\n", false},
		{"audit", "usage: scheduler audit [flags] [--job JOB] --from T1 [--to T2]\n", true},
	} {
		for _, args := range [][]string{{c.cmd, "-h"}, {"help", c.cmd}} {
			code, stdout, stderr := runCLI(t, args...)
			if code != ExitOK || stderr != "" || !strings.HasPrefix(stdout, c.usage) {
				t.Errorf("%q: exit %d, stderr %q, stdout:\n%s\nwant it to start %q", args, code, stderr, stdout, c.usage)
			}
			if c.job != strings.Contains(stdout, jobArg) {
				t.Errorf("%q: says what JOB is: %v, want %v:\n%s", args, !c.job, c.job, stdout)
			}
		}
	}
	// A command whose only argument is a job names it too.
	if _, stdout, _ := runCLI(t, "help", "backfill"); !strings.HasPrefix(stdout, "usage: scheduler backfill [flags] JOB\n") {
		t.Errorf("help backfill:\n%s", stdout)
	}
}

// A configuration file that is not there is reported once, by name, as bad
// configuration (exit 2), by every command that reads one.
func TestCLIMissingConfigSaidOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, args := range [][]string{
		{"validate"}, {"run"}, {"next", "--job", "hello"}, {"history"}, {"trigger", "hello"},
		{"pause", "--reason", "x"}, {"resume", "--reason", "x", "hello"}, {"backfill", "hello", "--from", "2026-01-01"},
		{"diff"}, {"jobs"}, {"audit", "--from", "-1h"},
	} {
		code, stdout, stderr := runCLI(t, append(args, "--config", missing)...)
		if code != ExitUsage || stdout != "" || stderr != missing+": no such configuration file\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and the file named once", args, code, stdout, stderr, ExitUsage)
		}
	}
}

// A bad flag is reported once, with the command's usage.
func TestCLIBadFlagSaidOnce(t *testing.T) {
	code, _, stderr := runCLI(t, "validate", "--job", "x")
	if code != ExitUsage || strings.Count(stderr, "flag provided but not defined: -job") != 1 ||
		!strings.Contains(stderr, "usage: scheduler validate [flags]") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A file with no jobs and no duties is valid, with a warning: validate
// prints it and passes, run logs it and runs.
func TestCLIWarnsOfNoJobs(t *testing.T) {
	dir := t.TempDir()
	empty, nojobs := filepath.Join(dir, "empty.yaml"), filepath.Join(dir, "nojobs.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nojobs, []byte("store: {kind: memory}\njobs: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "validate", "--config", empty)
	if code != ExitOK || !strings.Contains(stdout, "ok, 0 jobs") ||
		stderr != "warning: "+empty+": the file is empty: no jobs and no duties, so a replica runs nothing\n" {
		t.Errorf("validate of an empty file: exit %d, %q, %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "validate", "--config", nojobs)
	if code != ExitOK || stderr != "warning: "+nojobs+":2: jobs: no jobs and no duties: a replica runs nothing\n" {
		t.Errorf("validate of no jobs: exit %d, %q", code, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testlog.Buffer
	done := make(chan int, 1)
	go func() { done <- Command(ctx, []string{"run", "--config", nojobs}, io.Discard, &logs, demoRegistry()) }()
	poll.Until(t, time.Minute, `"scheduler started" logged`, func() error {
		if !strings.Contains(logs.String(), "scheduler started") {
			return fmt.Errorf("logs:\n%s", logs.String())
		}
		return nil
	})
	cancel()
	if code := <-done; code != ExitOK || !strings.Contains(logs.String(), `msg="configuration warning"`) ||
		!strings.Contains(logs.String(), `key=jobs warning="no jobs and no duties: a replica runs nothing"`) {
		t.Errorf("run: exit %d, logs:\n%s", code, logs.String())
	}
}
