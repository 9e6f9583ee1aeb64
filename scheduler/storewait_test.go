package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
)

// A replica started while its store is unreachable waits for the store
// instead of exiting: it retries opening it, logging each failure, and
// starts once the store answers.
func TestRunWaitsForItsStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	t.Parallel()
	srv := testserver.StartRedis(t)
	proxy := testserver.StartProxy(t, srv.Addr())
	proxy.Cut()
	s, logs := loggedReplica(t, fmt.Sprintf("store: {kind: redis, redis: {addr: %q}}", proxy.Addr()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitLog := func(msg string) {
		t.Helper()
		poll.Until(t, 30*time.Second, fmt.Sprintf("%q logged", msg), func() error {
			if !strings.Contains(logs(), msg) {
				return fmt.Errorf("logs:\n%s", logs())
			}
			return nil
		})
	}
	waitLog("opening the store failed; retrying")
	proxy.Restore()
	waitLog("scheduler started")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A store that cannot be opened for a reason waiting cannot mend (here a
// SQLite file in a directory that does not exist) fails Run at once.
func TestRunDoesNotWaitForABrokenStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "slotcron.db")
	s, logs := loggedReplica(t, fmt.Sprintf("store: {kind: sqlite, sqlite: {path: %q}}", path))
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run opened a SQLite file in a missing directory")
	}
	if strings.Contains(logs(), "retrying") {
		t.Fatalf("Run retried a store it can never open:\n%s", logs())
	}
}

// loggedReplica is a replica of one hourly job on the given store whose
// log the test reads back (the handler serialises its writes to the file).
func loggedReplica(t *testing.T, store string) (*Scheduler, func() string) {
	t.Helper()
	cfg, err := Parse("wait.yaml", []byte(store+"\njobs: {hello: {schedule: '@hourly'}}"))
	if err != nil {
		t.Fatal(err)
	}
	reg := jobs.NewRegistry()
	reg.Register("hello", func(context.Context, jobs.Run) error { return nil })
	logFile, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s, err := New(cfg, reg, WithLogger(slog.New(slog.NewTextHandler(logFile, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return s, func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
}
