package testlog

import (
	"log/slog"
	"sync"
	"testing"
)

// TestBufferCollectsEveryGoroutinesRecords: what loggers of several
// goroutines write comes back whole, a record a line, and Logged picks
// those of one message.
func TestBufferCollectsEveryGoroutinesRecords(t *testing.T) {
	var b Buffer
	log := slog.New(slog.NewJSONHandler(&b, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				log.Info("tick", "g", i)
			}
			log.Warn("done", "g", i)
		})
	}
	wg.Wait()
	if n := len(b.Records(t)); n != 8*51 {
		t.Errorf("%d records, want %d", n, 8*51)
	}
	done := b.Logged(t, "done")
	if len(done) != 8 || done[0]["level"] != "WARN" {
		t.Errorf("records of done: %v, want 8 at WARN", done)
	}
	if recs := new(Buffer).Records(t); len(recs) != 0 {
		t.Errorf("an empty buffer holds %v", recs)
	}
}
