package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// The tenants example, a program outside slotcron's module as a user
// writes one, creates 10,000 schedules of one registered job, each at a
// random minute and second in a random zone, through the Go API against
// Postgres; three replica processes of it then run them over a window that
// crosses a minute boundary, and its own check finds every due slot run
// once, none run twice or undue, and fences growing per schedule.
func TestTenantsExample(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "tenants")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example with")
	}
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "examples", "tenants")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	pg := testserver.StartPostgres(t)
	config := filepath.Join(dir, "tenants.yaml")
	doc := "replica: ${SLOTCRON_REPLICA:-tool}\nstore: {kind: postgres, postgres: {dsn: ${DATABASE_URL}}}\nlog: {format: json}\n" +
		"shutdown_grace: 5s\ndefaults: {lease: 5s, starting_deadline: 20s}\n"
	if err := os.WriteFile(config, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "DATABASE_URL="+pg.DSN())
	tool := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--config", config)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tenants %s: %v\n%s", args[0], err, out)
		}
		return string(out)
	}
	t.Log(tool("create", "-n", "10000", "-seed", "7"))
	var procs []*proc
	for i := range 3 {
		cmd := exec.Command(bin, "run", "--config", config)
		cmd.Env = append(env, fmt.Sprintf("SLOTCRON_REPLICA=r%d", i))
		procs = append(procs, startProc(t, fmt.Sprintf("r%d", i), cmd))
	}
	for _, p := range procs {
		p.waitFor(t, "scheduler started", 60*time.Second)
	}
	// A window from a few seconds from now to past the next minute
	// boundary, at least 70 s long.
	from := time.Now().Truncate(time.Second).Add(3 * time.Second)
	to := from.Truncate(time.Minute).Add(time.Minute + 15*time.Second)
	if to.Sub(from) < 70*time.Second {
		to = to.Add(time.Minute)
	}
	time.Sleep(time.Until(to) + 5*time.Second)
	for _, p := range procs {
		p.stop(t)
	}
	out := tool("check", "-from", from.UTC().Format(time.RFC3339), "-to", to.UTC().Format(time.RFC3339))
	t.Log(out)
}
