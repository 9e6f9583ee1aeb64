package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
)

// runCmd runs the scheduler binary with args, as replica name for the
// configuration's ${SLOTCRON_REPLICA}, and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "SLOTCRON_REPLICA=cli")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// enrollOnce starts replica name on conf until the catalog has its jobs
// (it enrolls them once started), then stops it.
func enrollOnce(t *testing.T, name, conf string) {
	t.Helper()
	p := startReplica(t, name, conf)
	p.waitFor(t, "scheduler started", 15*time.Second)
	poll.Until(t, 15*time.Second, name+" to enroll its jobs", func() error {
		_, stdout, stderr := runCmd(t, "jobs", "--config", conf, "--json")
		var l struct {
			Jobs        []json.RawMessage `json:"jobs"`
			NotEnrolled []json.RawMessage `json:"not_enrolled"`
		}
		if err := json.Unmarshal([]byte(stdout), &l); err != nil || len(l.Jobs) == 0 || len(l.NotEnrolled) > 0 {
			return fmt.Errorf("jobs: %v: %s%s", err, stdout, stderr)
		}
		return nil
	})
	p.stop(t)
}

// auditJSON is what the test reads of audit --json.
type auditJSON struct {
	Unaccounted int            `json:"unaccounted"`
	Counts      map[string]int `json:"counts"`
	Jobs        []struct {
		Job   string `json:"job"`
		Slots []struct {
			Slot   string `json:"slot"`
			Fate   string `json:"fate"`
			Reason string `json:"reason"`
			Holder string `json:"holder"`
		} `json:"slots"`
	} `json:"jobs"`
}

// After every replica was down across 5 slots of a job, the replica that
// starts next records them missed, and audit lists all 5 as missed by
// an outage (reason "missed: no replica claimed it in time", metric
// reason down), none unaccounted, and exits 0.
func TestAuditListsSlotsMissedWhileDown(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	conf := configAt(t, dir, "slotcron.yaml", 0, "  pulse: {run: hello, schedule: \"* * * * * *\", starting_deadline: 1s}\n")
	enrollOnce(t, "r0", conf)
	from := time.Now().Truncate(time.Second).Add(2 * time.Second)
	to := from.Add(4 * time.Second)
	time.Sleep(time.Until(to.Add(3 * time.Second))) // every replica down across the window, and its deadlines
	r1 := startReplica(t, "r1", conf)
	r1.waitFor(t, "scheduler started", 15*time.Second)

	args := []string{"audit", "--config", conf, "--job", "pulse", "--from", from.UTC().Format(time.RFC3339),
		"--to", to.UTC().Format(time.RFC3339), "--json"}
	var a auditJSON
	var code int
	poll.Until(t, 30*time.Second, "audit to list the 5 slots skipped", func() error {
		c, stdout, stderr := runCmd(t, args...)
		a, code = auditJSON{}, c
		if err := json.Unmarshal([]byte(stdout), &a); err != nil {
			return fmt.Errorf("exit %d, %v: %s%s", c, err, stdout, stderr)
		}
		if a.Counts["skipped"] != 5 {
			return fmt.Errorf("counts %v", a.Counts)
		}
		return nil
	})
	if code != 0 || a.Unaccounted != 0 || len(a.Jobs) != 1 || len(a.Jobs[0].Slots) != 5 {
		t.Fatalf("audit: exit %d, %+v", code, a)
	}
	for i, s := range a.Jobs[0].Slots {
		if want := from.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339); s.Slot != want ||
			s.Fate != "skipped" || s.Reason != "missed: no replica claimed it in time" || s.Holder != "r1" {
			t.Errorf("slot %d: %+v, want %s skipped by r1 as missed while down", i, s, want)
		}
	}
	r1.stop(t)
}

// diff on a changed file prints the change and exits 1; on the file in
// force it exits 0; jobs lists the job with its spec's source.
func TestDiffOfChangedFile(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	conf := configAt(t, dir, "slotcron.yaml", 0, "  tick: {run: hello, schedule: \"*/2 * * * * *\"}\n")
	enrollOnce(t, "r0", conf)

	code, stdout, stderr := runCmd(t, "diff", "--config", conf)
	if code != 0 || !strings.Contains(stdout, "no change") {
		t.Errorf("diff of the same file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	changed := configAt(t, dir, "changed.yaml", 0, "  tick: {run: hello, schedule: \"*/3 * * * * *\"}\n")
	code, stdout, stderr = runCmd(t, "diff", "--config", changed)
	if code != 1 || !strings.Contains(stdout, "changed  tick") || !strings.Contains(stdout, `schedule: "*/2 * * * * *" → "*/3 * * * * *"`) {
		t.Errorf("diff of a changed file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runCmd(t, "jobs", "--config", filepath.Join(dir, "slotcron.yaml"))
	if code != 0 || !strings.Contains(stdout, "tick") || !strings.Contains(stdout, "r0") || !strings.Contains(stdout, "same") {
		t.Errorf("jobs: exit %d:\n%s", code, stdout)
	}
}
