//go:build unix

package testserver

import (
	"go.uber.org/goleak"

	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Postgres is a private PostgreSQL cluster started by a test: initdb in a
// temporary directory, a postgres server listening only on 127.0.0.1 on a
// free port with its unix socket inside that directory, trust
// authentication, fsync off. When the tests run as root, initdb and postgres
// run as the postgres OS user, because postgres refuses to run as root.
type Postgres struct {
	bin  string // directory of initdb and postgres
	dir  string // temporary directory: data/, sock/, log
	port int
	cred *syscall.Credential // nil unless the tests run as root

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	dbs    atomic.Int64  // databases created by CreateDatabase
}

// StartPostgres starts a private cluster for tb and stops it, removing its
// files, when tb's cleanup runs. Without PostgreSQL binaries it skips tb, or
// fails it when the environment variable CI is "true".
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	p, err := pgStart()
	if err != nil {
		pgSkipOrFail(tb, err)
	}
	tb.Cleanup(p.Stop)
	return p
}

var (
	pgShared     *Postgres
	pgSharedErr  error
	pgSharedOnce sync.Once
)

// SharedPostgres returns the cluster shared by every test of the calling
// package, starting it on first use. Tests sharing it must use a database
// or schema of their own. The package's TestMain must call
// StopSharedPostgres after m.Run.
func SharedPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	pgSharedOnce.Do(func() { pgShared, pgSharedErr = pgStart() })
	if pgSharedErr != nil {
		pgSkipOrFail(tb, pgSharedErr)
	}
	return pgShared
}

// StopSharedPostgres stops the shared cluster, if one was started, and
// removes its files.
func StopSharedPostgres() {
	if pgShared != nil {
		pgShared.Stop()
	}
}

// errPGNoBinaries reports that the PostgreSQL server binaries are not
// installed.
var errPGNoBinaries = errors.New("testserver: PostgreSQL server binaries (initdb, postgres) not found")

func pgSkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errPGNoBinaries) && os.Getenv("CI") != "true" {
		tb.Skipf("%v: install PostgreSQL (e.g. the postgresql Debian package) to run this test", err)
	}
	tb.Fatal(err)
}

// DSN returns a URL for the cluster's postgres database as the postgres
// superuser.
func (p *Postgres) DSN() string { return p.dsnFor("postgres") }

// Port returns the TCP port the cluster listens on.
func (p *Postgres) Port() int { return p.port }

func (p *Postgres) dsnFor(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// CreateDatabase creates a fresh database for tb, dropped when tb's cleanup
// runs, and returns its URL.
func (p *Postgres) CreateDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), p.dbs.Add(1))
	if err := p.exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("testserver: create database: %v", err)
	}
	tb.Cleanup(func() {
		// FORCE ends the sessions a test left behind.
		if err := p.exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("testserver: drop database %s: %v", name, err)
		}
	})
	return p.dsnFor(name)
}

// exec runs one statement on the postgres database.
func (p *Postgres) exec(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, p.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql).ReadAll()
	return err
}

// Restart stops the server with a fast shutdown and starts it again on the
// same port with the same data. Connections open before it are broken.
func (p *Postgres) Restart(tb testing.TB) {
	tb.Helper()
	p.stop()
	if err := p.serve(); err != nil {
		tb.Fatalf("testserver: restart postgres: %v", err)
	}
}

// Crash stops the server with an immediate shutdown (SIGQUIT: no
// checkpoint, crash recovery at the next start), as a crashed server
// stops, and starts it again on the same port. Committed transactions
// survive it; connections open before it are broken.
func (p *Postgres) Crash(tb testing.TB) {
	tb.Helper()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	}
	p.stop()
	if err := p.serve(); err != nil {
		tb.Fatalf("testserver: restart postgres after a crash: %v", err)
	}
}

// Stop shuts the server down and removes its files. It is safe to call more
// than once.
func (p *Postgres) Stop() {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir != "" {
		os.RemoveAll(p.dir)
		p.dir = ""
	}
}

// pgStart runs initdb in a new temporary directory and starts the server.
func pgStart() (*Postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "slotcron-pg-")
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	p := &Postgres{bin: bin, dir: dir, cred: cred}
	if err := p.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Another process may take a free port before the server binds it.
	for range 3 {
		if p.port, err = pgFreePort(); err != nil {
			break
		}
		if err = p.serve(); err == nil {
			return p, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// pgBinDir finds the directory holding initdb and postgres: on PATH, from
// pg_config --bindir, or in Debian's versioned directories.
func pgBinDir() (string, error) {
	if path, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(path), nil
	}
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	globbed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(globbed) - 1; i >= 0; i-- { // newest version first
		dirs = append(dirs, globbed[i])
	}
	for _, d := range dirs {
		if pgIsExec(filepath.Join(d, "initdb")) && pgIsExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errPGNoBinaries
}

func pgIsExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// pgCredential returns the postgres OS user's credential when the tests
// run as root, and nil otherwise.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("testserver: running as root, and postgres refuses to: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("testserver: uid of postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("testserver: gid of postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// pgFreePort returns a loopback TCP port that was free a moment ago.
func pgFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// command returns a command running bin/name as the cluster's OS user.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"LC_ALL=C", "LANG=C", "PATH=" + p.bin + ":/usr/bin:/bin"}
	OrphanProof(cmd) // no server outlives a test binary that dies without cleaning up
	if p.cred != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = p.cred
	}
	return cmd
}

// initdb creates the cluster in dir/data, owned by the cluster's OS user.
func (p *Postgres) initdb() error {
	if p.cred != nil {
		if err := os.Chown(p.dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return fmt.Errorf("testserver: %w", err)
		}
	}
	cmd := p.command("initdb", "-D", filepath.Join(p.dir, "data"), "-U", "postgres", "--auth=trust",
		"--no-sync", "--encoding=UTF8", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testserver: initdb in %s (the postgres OS user must be able to reach it; see TMPDIR): %w\n%s", p.dir, err, out)
	}
	return nil
}

// serve starts the server on p.port and waits until it accepts
// connections.
func (p *Postgres) serve() error {
	sock := filepath.Join(p.dir, "sock")
	if err := os.MkdirAll(sock, 0o700); err != nil {
		return fmt.Errorf("testserver: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(sock, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return fmt.Errorf("testserver: %w", err)
		}
	}
	logPath := filepath.Join(p.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testserver: %w", err)
	}
	defer logFile.Close()
	cmd := p.command("postgres", "-D", filepath.Join(p.dir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(p.port),
		"-c", "unix_socket_directories="+sock,
		// fsync off: only a crash of the machine could lose data, and
		// tests crash only the server. synchronous_commit stays on, so an
		// immediate shutdown (Crash) keeps every committed transaction,
		// as a real server's crash does.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "logging_collector=off")
	cmd.Stdout, cmd.Stderr = logFile, logFile

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testserver: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()

	if err := p.waitReady(exited); err != nil {
		p.stop()
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("testserver: postgres on port %d: %w\n%s", p.port, err, pgTail(log, 20))
	}
	return nil
}

// waitReady polls the server until a connection succeeds, the server
// exits, or 30 seconds pass.
func (p *Postgres) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgconn.Connect(ctx, p.DSN())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-exited:
			return errors.New("server exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after 30s: %w", err)
		}
	}
}

// stop shuts the server down: a fast shutdown (SIGINT), then an immediate
// one (SIGQUIT), then SIGKILL, each given ten seconds.
func (p *Postgres) stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGQUIT, os.Kill} {
		cmd.Process.Signal(sig)
		select {
		case <-exited:
			return
		case <-time.After(10 * time.Second):
		}
	}
	<-exited
}

// pgTail returns the last n lines of log.
func pgTail(log []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RunWithSharedPostgres is a TestMain for packages that use SharedPostgres:
// it runs the tests, stops the shared cluster, checks that no goroutine
// outlived the tests (when they passed), and exits with their code.
func RunWithSharedPostgres(m *testing.M) {
	code := m.Run()
	StopSharedPostgres()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
