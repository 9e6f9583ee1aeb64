package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestScheduleFeedSharedFile: Stores sharing one file, each with its own
// connections as separate processes have, write schedules at once while
// another follows the feed in small pages; the follower never gets a
// change at or below its cursor, and once the writers stop it holds every
// schedule as the file does.
func TestScheduleFeedSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	const writers, rounds, ids = 3, 30, 8
	follower := openShared(t, path)
	stores := make([]slotstore.Store, writers)
	for i := range stores {
		stores[i] = openShared(t, path)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				ws := []slotstore.ScheduleWrite{
					{ID: fmt.Sprintf("s%d", (w+r)%ids), Run: "j", Spec: slotstore.Spec{Fingerprint: fmt.Sprintf("w%d-r%d", w, r)}, IfVersion: slotstore.AnyVersion},
					{ID: fmt.Sprintf("s%d", (w*3+r)%ids), Delete: true, IfVersion: slotstore.AnyVersion},
				}
				res, err := s.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: fmt.Sprintf("w%d", w), Writes: ws})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if res[0].Err != nil || (res[1].Err != nil && !errors.Is(res[1].Err, slotstore.ErrNoSchedule)) {
					t.Errorf("writer %d round %d: %v, %v", w, r, res[0].Err, res[1].Err)
					return
				}
			}
		}()
	}
	seen := map[string]slotstore.CatalogEntry{}
	var cursor int64
	poll := func() {
		t.Helper()
		c, err := follower.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Entries {
			if e.Seq <= cursor || e.Seq > c.Head {
				t.Fatalf("change of %s at %d, the cursor at %d, the head %d", e.Job, e.Seq, cursor, c.Head)
			}
			cursor = e.Seq
			seen[e.Job] = e
		}
		if len(c.Entries) < 3 {
			cursor = c.Head
		}
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()
	for done := false; !done; {
		select {
		case <-writing:
			done = true
		case <-time.After(time.Millisecond):
		}
		poll()
	}
	for range 2 * rounds * writers { // drains what the last polls left
		poll()
	}
	all, err := follower.ScheduleChanges(t.Context(), slotstore.ChangesParams{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if cursor != all.Head || len(seen) != len(all.Entries) {
		t.Fatalf("the follower is at %d with %d schedules; the file at %d with %d", cursor, len(seen), all.Head, len(all.Entries))
	}
	for _, e := range all.Entries {
		got := seen[e.Job]
		if got.Seq != e.Seq || got.Version != e.Version || got.Deleted != e.Deleted || got.InForce.Fingerprint != e.InForce.Fingerprint {
			t.Errorf("%s: the follower holds seq %d version %d deleted %v spec %s; the file seq %d version %d deleted %v spec %s",
				e.Job, got.Seq, got.Version, got.Deleted, got.InForce.Fingerprint, e.Seq, e.Version, e.Deleted, e.InForce.Fingerprint)
		}
	}
}
