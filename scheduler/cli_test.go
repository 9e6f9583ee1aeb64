package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
// first of the two autumn 02:30s.
func TestCLINextAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"2026-03-27T12:00:00Z", []string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"2026-10-23T12:00:00Z", []string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
	} {
		code, stdout, stderr := runCLI(t, "next", "--schedule", "30 2 * * *", "--timezone", "Europe/Berlin", "-n", "3", "--from", tc.from)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got := strings.Fields(stdout); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("from %s: %v, want %v", tc.from, got, tc.want)
		}
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
		var v struct{ Job, Slot, Key string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if v.Job != "hello" || v.Slot != want.Format(time.RFC3339) || v.Key != "hello@"+v.Slot {
			t.Errorf("line %q, want slot %v", line, want)
		}
		want = want.Add(10 * time.Second)
	}
	if code, _, stderr := runCLI(t, "next", "--config", "../config.example.yaml", "--job", "nope"); code != ExitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown job: exit %d %q", code, stderr)
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
	if code, _, stderr := runCLI(t, "history", "--config", conf, "--job", "nope"); code != ExitUsage || !strings.Contains(stderr, `no job "nope"`) {
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
	if code, stdout, stderr := runCLI(t, "pause", "--config", conf, "hello"); code != ExitOK || !strings.Contains(stdout, "jobs=[hello]") {
		t.Errorf("pause hello: exit %d %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "pause", "--config", conf); code != ExitOK || !strings.Contains(stdout, "all=true") {
		t.Errorf("pause cluster: exit %d %q", code, stdout)
	}
	if code, stdout, _ := runCLI(t, "resume", "--config", conf); code != ExitOK || !strings.Contains(stdout, "all=false jobs=[hello]") {
		t.Errorf("resume cluster: exit %d %q", code, stdout)
	}
	if code, stdout, _ := runCLI(t, "resume", "hello", "--config", conf); code != ExitOK || !strings.Contains(stdout, "all=false jobs=[]") {
		t.Errorf("resume hello: exit %d %q", code, stdout)
	}
	if code, _, _ := runCLI(t, "pause", "--config", conf, "nope"); code != ExitUsage {
		t.Errorf("pause of an unknown job: exit %d", code)
	}
	if code, _, stderr := runCLI(t, "trigger", "hello", "--config", conf, "extra"); code != ExitUsage || !strings.Contains(stderr, "exactly one job") {
		t.Errorf("trigger of two jobs: exit %d %q", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "trigger", "hello", "--config", conf) // flags after the job
	if code != ExitOK || !strings.Contains(stdout, ": succeeded") {
		t.Errorf("trigger: exit %d %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "history", "--config", conf, "--json"); code != ExitOK || !strings.Contains(stdout, `"manual":true`) {
		t.Errorf("history after trigger: %q", stdout)
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
