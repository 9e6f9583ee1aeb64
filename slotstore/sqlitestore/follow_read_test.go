package sqlitestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// TestReadsDuringFollow: reads racing the store's move to a new file never
// use the database it closed, and reads after the move use the new file.
// (A read under way at the moment its file is deleted may fail — an I/O
// error, or a new connection finding the empty file it made — it says so;
// it does not answer wrong.)
func TestReadsDuringFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	a := open(t, path)
	enroll(t, a, "j")
	var failed atomic.Int64
	var last atomic.Value
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := a.History(ctx, slotstore.HistoryParams{Job: "j"}); stale(err) && ctx.Err() == nil {
					failed.Add(1)
					last.Store(err.Error())
				}
				if _, err := a.Pauses(ctx); stale(err) && ctx.Err() == nil {
					failed.Add(1)
					last.Store(err.Error())
				}
			}
		})
	}
	for range 20 {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			os.Remove(p)
		}
		// The move may meet a reader's connection holding the new file
		// (SQLITE_BUSY); a write fails then and the next one moves, as the
		// engine's retries do.
		poll.Until(t, 10*time.Second, "a write that moves to the new file", func() error {
			_, err := a.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"j"}})
			if err != nil && !errors.Is(err, sqlitestore.ErrBusy) {
				t.Fatal(err)
			}
			return err
		})
		time.Sleep(5 * time.Millisecond) // let the readers run between moves
	}
	cancel()
	wg.Wait()
	// Settled: reads see the file now at the path.
	if _, err := a.Pauses(t.Context()); err != nil {
		t.Errorf("pauses after the moves: %v", err)
	}
	if ms, err := a.History(t.Context(), slotstore.HistoryParams{Job: "j"}); err != nil || len(ms) != 0 {
		t.Errorf("history after the moves: %v, %v", ms, err)
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d reads failed while the store followed its file; last: %v", n, last.Load())
	}
}

// stale reports whether err says a read used a closed database.
func stale(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database is closed")
}

// TestReadFollowsDeletedFile: a read that comes first after the file was
// deleted reads the file now at the path, not the deleted one's data.
func TestReadFollowsDeletedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	a := open(t, path)
	if err := a.SetPause(t.Context(), slotstore.PauseParams{Job: "j", Paused: true}); err != nil {
		t.Fatal(err)
	}
	if ps, err := a.Pauses(t.Context()); err != nil || len(ps.Jobs) != 1 {
		t.Fatalf("pauses: %+v, %v", ps, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
	b := open(t, path) // another process starts on a new file
	if ps, err := b.Pauses(t.Context()); err != nil || len(ps.Jobs) != 0 {
		t.Fatalf("pauses in the new file: %+v, %v", ps, err)
	}
	if ps, err := a.Pauses(t.Context()); err != nil || len(ps.Jobs) != 0 || ps.All {
		t.Errorf("pauses read after the file was deleted: %+v, %v; want the new file's (none)", ps, err)
	}
}
