package scheduler

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The clients of the stores a program does not use: each store kind links
// its own, so a service that imports package scheduler links only those of
// the kinds it imports (storekind); nor does it link tracing's SDK.
var storeClients = map[string]string{
	"redis":    "github.com/redis/go-redis/",
	"postgres": "github.com/jackc/pgx/",
	"etcd":     "go.etcd.io/",
	"grpc":     "google.golang.org/grpc", // etcd's transport
	"zap":      "go.uber.org/zap",        // etcd's logger
	// Not a store's: tracing's SDK and exporter, which scheduler/otlp links.
	"otel sdk": "go.opentelemetry.io/otel/sdk",
}

// A service that imports package scheduler alone links SQLite and no
// other store's client; one that imports scheduler/postgres too links pgx,
// and still no gRPC, etcd, zap or go-redis.
func TestLeanImport(t *testing.T) {
	for _, tc := range []struct {
		program string
		links   string   // a package the program must link
		clients []string // the clients it links
	}{
		{"./testdata/lean/sqlite", "modernc.org/sqlite", nil},
		{"./testdata/lean/postgres", "github.com/slotcron/slotcron/slotstore/pgstore", []string{"postgres"}},
	} {
		t.Run(filepath.Base(tc.program), func(t *testing.T) {
			out, err := exec.Command(goTool(t), "list", "-deps", tc.program).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps %s: %v\n%s", tc.program, err, out)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, tc.links) {
				t.Errorf("%s does not link %s", tc.program, tc.links)
			}
			for name, prefix := range storeClients {
				i := slices.IndexFunc(deps, func(d string) bool { return strings.HasPrefix(d, prefix) })
				switch want := slices.Contains(tc.clients, name); {
				case i >= 0 && !want:
					t.Errorf("%s links %s (%s)", tc.program, deps[i], name)
				case i < 0 && want:
					t.Errorf("%s does not link %s", tc.program, prefix)
				}
			}
		})
	}
}

// A configuration that names a store kind the binary does not link is an
// error at store.kind that names the import to add.
func TestUnlinkedKindNamesTheImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sqlite")
	if out, err := exec.Command(goTool(t), "build", "-o", bin, "./testdata/lean/sqlite").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	conf := filepath.Join(dir, "slotcron.yaml")
	doc := "store:\n  kind: postgres\n  postgres: {dsn: postgres://db/x}\njobs:\n  hello: {schedule: '@hourly'}\n"
	if err := os.WriteFile(conf, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", "--config", conf).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("validate: %v, want exit status 2\n%s", err, out)
	}
	want := conf + `:2: store.kind: store kind "postgres" is not linked into this binary: ` +
		`import _ "github.com/slotcron/slotcron/scheduler/postgres"`
	if !strings.Contains(string(out), want) {
		t.Errorf("validate printed\n%s\nwant a line\n%s", out, want)
	}
}

// goTool is the go command.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	return p
}

// A Redis store handed over with WithStore by a binary that does not link
// the redis kind is refused by New, naming the import: electing its duties
// in the slot store would elect a second leader beside replicas that link
// the kind and elect on Redis.
func TestWithStoreOfUnlinkedKindNamesTheImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	out, err := exec.Command(goTool(t), "run", "./testdata/lean/unlinked").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	want := `a *redisstore.Store elects duties with an elector of its own, whose store kind is not linked into this binary: ` +
		`import _ "github.com/slotcron/slotcron/scheduler/redis"`
	if !strings.Contains(string(out), want) {
		t.Errorf("the program printed\n%s\nwant a line\n%s", out, want)
	}
}
