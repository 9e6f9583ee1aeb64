package engine

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/jobs"
)

// The engine's own tests reach into the loop; what a replica does end to
// end is tested through the scheduler package.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogger discards logs unless SLOTCRON_TEST_LOG is set.
func testLogger() *slog.Logger {
	h := slog.Handler(slog.DiscardHandler)
	if os.Getenv("SLOTCRON_TEST_LOG") != "" {
		h = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	return slog.New(h)
}

// started is one run a recorder was given, and when.
type started struct {
	run jobs.Run
	at  time.Time
}

// recorder is a job that records its runs and returns at once.
type recorder struct {
	mu   sync.Mutex
	runs []started
}

func (r *recorder) fn(_ context.Context, run jobs.Run) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, started{run, time.Now()})
	return nil
}

func (r *recorder) snapshot() []started {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]started(nil), r.runs...)
}

// job is a job run by fn, with the settings the engine's tests share; a
// test sets what it needs beyond them.
func job(name string, fn jobs.Func) JobSpec {
	return JobSpec{Name: name, Fn: fn, Lease: 3 * time.Second, Timeout: time.Minute, Deadline: time.Minute, History: time.Hour}
}

// newEngine builds the engine of replica "a" on time.Now.
func newEngine(t *testing.T, specs ...JobSpec) *Engine {
	t.Helper()
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second, Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
