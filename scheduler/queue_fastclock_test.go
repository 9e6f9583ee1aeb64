package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// countingStore counts the claims answered Queued.
type countingStore struct {
	slotstore.Store
	queued atomic.Int64
}

func (c *countingStore) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	res, err := c.Store.Claim(ctx, p)
	for _, r := range res {
		if r.Status == slotstore.Queued {
			c.queued.Add(1)
		}
	}
	return res, err
}

// A replica whose clock runs ahead of the store's by more than the
// starting deadline looks again at a waiting slot at most every lease/3,
// as any replica does, not in a loop: the slot's window is the store's.
func TestQueueFastClockWaitsPolitely(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rec, reg := rig(&recorder{sleep: 25 * time.Second}, "slow")
		st := &countingStore{Store: memstore.New(memstore.Options{})}
		cfg, err := Parse("test.yaml", []byte(`jobs: {slow: {schedule: "*/20 * * * * *", starting_deadline: 10s, lease: 6s, overlap: queue, catch_up: none}}`))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ShutdownGrace, cfg.Replica = Duration(time.Second), "fast"
		s, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()), WithClock(func() time.Time { return time.Now().Add(30 * time.Second) }))
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, s)
		time.Sleep(75 * time.Second)
		stop()
		// Three or four slots wait, each for at most its 10 s window, looked
		// at every 2 s: a few dozen claims.
		if q := st.queued.Load(); q > 40 {
			t.Errorf("%d claims answered Queued in 75 s with a lease of 6 s", q)
		}
		if len(rec.snapshot()) < 2 {
			t.Errorf("%d runs, want the waiting slots to run", len(rec.snapshot()))
		}
	})
}
