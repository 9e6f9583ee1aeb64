package scheduler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/admin"
)

// TestCLISchedules: put (flags and a file of several), get, list, pause,
// delete against a SQLite store; a bad schedule exits 1 naming its field,
// a usage mistake 2.
func TestCLISchedules(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	doc := "store: {sqlite: {path: " + filepath.Join(dir, "s.db") + "}}\njobs: {hello: {schedule: '@hourly', overlap: forbid}}\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "schedules", "put", "--config", cfg, "--job", "hello", "--schedule", "0 9 * * *",
		"--timezone", "Europe/Berlin", "--params", `{"n":1}`, "tenant-1")
	if code != ExitOK || !strings.Contains(out, "put schedule tenant-1 (version 1)") {
		t.Fatalf("put: exit %d\n%s%s", code, out, errs)
	}
	file := filepath.Join(dir, "many.json")
	many := `[{"id":"tenant-2","job":"hello","schedule":"@every 90s"},{"id":"other","job":"hello","schedule":"@daily","overlap":"allow"}]`
	if err := os.WriteFile(file, []byte(many), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = runCLI(t, "schedules", "put", "--config", cfg, "-f", file); code != ExitOK || strings.Count(out, "put schedule") != 2 {
		t.Fatalf("put -f: exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"id":"tenant-3","job":"hello","schedule":"@hourly"},{"id":"tenant-4","job":"hello","schedule":"61 * * * *"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs = runCLI(t, "schedules", "put", "--config", cfg, "-f", bad); code != ExitFailure || !strings.Contains(errs, "nothing written") {
		t.Fatalf("put -f with a bad schedule: exit %d %s", code, errs)
	}
	code, out, errs = runCLI(t, "schedules", "get", "--config", cfg, "--json", "tenant-1")
	var got admin.ScheduleJSON
	if code != ExitOK || json.Unmarshal([]byte(out), &got) != nil || got.Overlap != "forbid" || got.Timezone != "Europe/Berlin" ||
		string(got.Params) != `{"n":1}` || !strings.HasPrefix(got.UpdatedBy, "cli ") {
		t.Fatalf("get: exit %d %+v\n%s%s", code, got, out, errs)
	}
	if code, out, _ = runCLI(t, "schedules", "list", "--config", cfg, "--prefix", "tenant-"); code != ExitOK ||
		!strings.Contains(out, "tenant-1") || !strings.Contains(out, "tenant-2") || strings.Contains(out, "other") ||
		strings.Contains(out, "tenant-3") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	// A schedule is a job to the other commands: trigger, history,
	// backfill, pause.
	if code, out, errs = runCLI(t, "trigger", "--config", cfg, "tenant-2"); code != ExitOK || !strings.Contains(out, "tenant-2@") {
		t.Fatalf("trigger of a schedule: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = runCLI(t, "history", "--config", cfg, "--job", "tenant-2"); code != ExitOK || !strings.Contains(out, "tenant-2") {
		t.Fatalf("history of a schedule: exit %d\n%s%s", code, out, errs)
	}
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if code, out, errs = runCLI(t, "backfill", "--config", cfg, "--dry-run", "--from", from, "tenant-2"); code != ExitOK {
		t.Fatalf("backfill of a schedule: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = runCLI(t, "pause", "--config", cfg, "--reason", "x", "other"); code != ExitOK {
		t.Fatalf("pause of a schedule: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs = runCLI(t, "schedules", "pause", "--config", cfg, "tenant-1"); code != ExitUsage || !strings.Contains(errs, "--reason") {
		t.Fatalf("pause without a reason: exit %d %s", code, errs)
	}
	if code, out, errs = runCLI(t, "schedules", "pause", "--config", cfg, "--reason", "on hold", "tenant-1"); code != ExitOK {
		t.Fatalf("pause: exit %d %s%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "schedules", "put", "--config", cfg, "--job", "hello", "--schedule", "61 * * * *", "bad")
	if code != ExitFailure || !strings.Contains(errs, "schedule:") || !strings.Contains(errs, `"61 * * * *"`) {
		t.Fatalf("a bad spec: exit %d %s", code, errs)
	}
	if code, _, errs = runCLI(t, "schedules", "delete", "--config", cfg, "--if-version", "9", "tenant-1"); code != ExitFailure || !strings.Contains(errs, "version") {
		t.Fatalf("a delete at a stale version: exit %d %s", code, errs)
	}
	if code, out, errs = runCLI(t, "schedules", "delete", "--config", cfg, "tenant-1"); code != ExitOK {
		t.Fatalf("delete: exit %d %s%s", code, out, errs)
	}
	if code, _, errs = runCLI(t, "schedules", "get", "--config", cfg, "tenant-1"); code != ExitFailure || !strings.Contains(errs, "no such schedule") {
		t.Fatalf("get of a deleted schedule: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"schedules"}, {"schedules", "frob"}, {"schedules", "get", "--config", cfg}, {"schedules", "list", "--config", cfg, "x"}} {
		if code, _, _ := runCLI(t, args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
