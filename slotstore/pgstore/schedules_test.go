package pgstore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestScheduleChangesNeverSkip: writers race on a few schedules while a
// reader follows the changes page by page; the reader never finds a change
// at or below its cursor, and ends knowing every schedule's last write:
// sequence numbers are committed in the order they are handed out, so no
// write with a number below the cursor commits after the reader passed it.
func TestScheduleChangesNeverSkip(t *testing.T) {
	t.Parallel()
	s := newStore(t, func(o *pgstore.Options) { o.PoolSize = 8 })
	const writers, rounds = 4, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for r := range rounds {
				var ws []slotstore.ScheduleWrite
				for k := range 1 + rng.IntN(4) {
					ws = append(ws, slotstore.ScheduleWrite{ID: fmt.Sprintf("s%02d", rng.IntN(12)), Run: "j",
						Spec: slotstore.Spec{Fingerprint: fmt.Sprintf("w%d-r%d-k%d", w, r, k)}, IfVersion: slotstore.AnyVersion})
				}
				if _, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "t", Writes: ws}); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]int64{}
	var cursor int64
	follow := func() {
		for {
			c, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: cursor, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.Entries {
				if e.Seq <= cursor {
					t.Fatalf("change %s at %d, after %d", e.Job, e.Seq, cursor)
				}
				seen[e.Job], cursor = e.Seq, e.Seq
			}
			if c.Head < cursor {
				t.Fatalf("head %d below the newest change read, %d", c.Head, cursor)
			}
			if len(c.Entries) == 0 {
				return
			}
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(time.Millisecond):
		}
		follow()
	}
	all, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all.Entries {
		if seen[e.Job] != e.Seq {
			t.Errorf("schedule %s: last write at %d, the reader saw %d", e.Job, e.Seq, seen[e.Job])
		}
	}
}

// BenchmarkWriteSchedules puts batches of 1,000 new schedules, the
// largest batch, and reports schedules written per second.
//
//	go test -run '^$' -bench WriteSchedules -benchtime 100x ./slotstore/pgstore/
func BenchmarkWriteSchedules(b *testing.B) {
	s := newStore(b)
	ws := make([]slotstore.ScheduleWrite, slotstore.MaxScheduleWrites)
	start := time.Now()
	for i := range b.N {
		for k := range ws {
			ws[k] = slotstore.ScheduleWrite{ID: fmt.Sprintf("tenant-%07d", i*len(ws)+k), Run: fmt.Sprintf("job-%d", k%10),
				Spec: slotstore.Spec{Fingerprint: "p1", Body: []byte(`{"cron":"*/5 * * * *"}`)}, IfVersion: slotstore.AnyVersion}
		}
		res, err := s.WriteSchedules(b.Context(), slotstore.WriteSchedulesParams{By: "bench", Writes: ws})
		if err != nil || res[len(res)-1].Err != nil {
			b.Fatalf("batch %d: %v", i, err)
		}
	}
	b.ReportMetric(float64(b.N*len(ws))/time.Since(start).Seconds(), "schedules/s")
}
