//go:build unix

package scheduler

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/jobs"
)

// cliChildEnv makes the test binary the CLI: with it set, init runs Main
// (and exits) before any test starts, so the signal tests run the real
// command in a process of its own without a separate build.
const cliChildEnv = "SLOTCRON_TEST_CLI_CHILD"

func init() {
	switch os.Getenv(cliChildEnv) {
	case "1":
		Main(demoRegistry())
	case "stubborn":
		// One job, hello, that ignores its context for a minute.
		reg := jobs.NewRegistry()
		reg.Register("hello", func(context.Context, jobs.Run) error { time.Sleep(time.Minute); return nil })
		Main(reg)
	}
}

// A command given a context that has ended stops before doing its work, and
// exits 1 saying so: validate does not report a configuration it did not
// finish reading as valid, run does not start.
func TestCLIInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("terminated signal received"))
	for _, cmd := range []string{"validate", "run", "next", "history", "trigger", "pause"} {
		var out, errb bytes.Buffer
		args := []string{cmd, "--config", "../config.example.yaml"}
		switch cmd {
		case "next":
			args = append(args, "--job", "hello")
		case "trigger":
			args = append(args, "hello")
		case "pause":
			args = append(args, "--reason", "test")
		}
		code := Command(ctx, args, &out, &errb, demoRegistry())
		if code != ExitFailure || !strings.Contains(errb.String(), "interrupted") || !strings.Contains(errb.String(), "terminated signal received") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and why", cmd, code, out.String(), errb.String())
		}
	}
}

// SIGTERM or SIGINT stops validate, and run before the scheduler starts,
// at once, with exit 1: here both are reading a configuration that never
// ends (a FIFO nobody closes), which only SIGKILL used to stop.
func TestSignalStopsStartUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, cmd := range []string{"validate", "run"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(cmd+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				fifo := filepath.Join(t.TempDir(), "slotcron.yaml")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				c := exec.Command(os.Args[0], cmd, "--config", fifo)
				c.Env = append(os.Environ(), cliChildEnv+"=1")
				var stderr bytes.Buffer
				c.Stderr = &stderr
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { _ = c.Wait(); close(done) }()
				t.Cleanup(func() { _ = c.Process.Kill(); <-done })

				w := openWriter(t, fifo, done)
				defer w.Close()
				if _, err := w.WriteString("store: {kind: memory}\njobs:\n"); err != nil {
					t.Fatal(err)
				}
				sent := time.Now()
				if err := c.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s still running 30s after %v; stderr:\n%s", cmd, sig, stderr.String())
				}
				t.Logf("exited %v after %v: %s", time.Since(sent).Round(time.Millisecond), sig, strings.TrimSpace(stderr.String()))
				if code := c.ProcessState.ExitCode(); code != ExitFailure || !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("exit %d, stderr %q; want exit 1 and the interruption explained", code, stderr.String())
				}
			})
		}
	}
}

// openWriter opens the FIFO for writing once the child has opened it for
// reading, which is when it is reading its configuration.
func openWriter(t *testing.T, fifo string, exited <-chan struct{}) *os.File {
	t.Helper()
	var w *os.File
	poll.Until(t, 30*time.Second, "the command to open its configuration", func() error {
		var err error
		w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.ENXIO): // ENXIO: no reader yet
			t.Fatal(err)
		}
		select {
		case <-exited:
			t.Fatal("the command exited before it read its configuration")
		default:
		}
		return errors.New("no reader of the FIFO yet")
	})
	return w
}

// The first SIGTERM shuts a running scheduler down gracefully, which waits
// shutdown_grace (a minute here) for a job that ignores cancellation; a
// second signal ends the process at once.
func TestSecondSignalEndsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "slotcron.yaml")
	doc := "store: {kind: memory}\nshutdown_grace: 1m\njobs: {hello: {schedule: '@every 1s', catch_up: none, lease: 5s}}\n"
	if err := os.WriteFile(conf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(os.Args[0], "run", "--config", conf)
	c.Env = append(os.Environ(), cliChildEnv+"=stubborn")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = pw
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() { _ = c.Process.Kill(); <-done })

	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitLine := func(msg string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the scheduler exited before it logged %s", msg)
				}
				if strings.Contains(l, msg) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s within 30s", msg)
			}
		}
	}
	waitLine(`msg="run started"`)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLine(`msg="shutting down"`)
	// The default action comes back just after the first signal is seen;
	// signal until it has (the first of these usually ends it).
	sent := time.Now()
	poll.Until(t, 30*time.Second, "the process to end on a second SIGTERM", func() error {
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			return nil
		case <-time.After(100 * time.Millisecond):
			return errors.New("still running")
		}
	})
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	t.Logf("ended %v after the second signal: %v", time.Since(sent).Round(time.Millisecond), c.ProcessState)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("process state %v, want killed by the second SIGTERM", c.ProcessState)
	}
}
