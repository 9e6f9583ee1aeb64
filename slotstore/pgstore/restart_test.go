package pgstore_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestRestartDuringClaims: replicas keep claiming batches of slots while
// the server restarts under them. Claims in flight fail, as outcome unknown
// or plain errors, never as results; no slot is reported won twice, every
// fence reported is unique and matches the slot's marker; and every
// replica's store claims again once the server is back.
func TestRestartDuringClaims(t *testing.T) {
	t.Parallel()
	pg := testserver.StartPostgres(t) // its own cluster: the restart must not disturb other tests
	const replicas, batch = 3, 4

	stores := make([]*pgstore.Store, replicas)
	for i := range stores {
		s, err := pgstore.Open(t.Context(), pgstore.Options{DSN: pg.DSN(), PoolSize: 2, StatementTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}

	type won struct {
		replica int
		fence   int64
	}
	var (
		mu        sync.Mutex
		winners   = map[time.Time][]won{}
		unknown   atomic.Int64
		plain     atomic.Int64
		restarted atomic.Bool
		afterOK   = make([]atomic.Int64, replicas) // successful claims after the restart
	)
	base := nextHour()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r, s := range stores {
		wg.Go(func() {
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				reqs := make([]slotstore.ClaimRequest, batch)
				for i := range reqs {
					reqs[i] = slotstore.ClaimRequest{Job: "restart", Slot: base.Add(time.Duration(round*batch+i) * time.Second), Lease: time.Hour}
				}
				wasRestarted := restarted.Load()
				res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: fmt.Sprint(r), Requests: reqs})
				switch {
				case errors.Is(err, slotstore.ErrOutcomeUnknown):
					unknown.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				case err != nil:
					if errors.Is(err, slotstore.ErrClosed) || errors.Is(err, slotstore.ErrInvalid) {
						t.Errorf("replica %d: %v", r, err)
						return
					}
					plain.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if wasRestarted {
					afterOK[r].Add(1)
				}
				mu.Lock()
				for _, c := range res {
					if c.Status == slotstore.Won {
						winners[c.Claim.Slot] = append(winners[c.Claim.Slot], won{r, c.Claim.Fence})
					}
				}
				mu.Unlock()
			}
		})
	}

	halt := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(halt) // when a wait below fails
	poll.Until(t, 20*time.Second, "20 slots won before the restart", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(winners) < 20 {
			return fmt.Errorf("%d won", len(winners))
		}
		return nil
	})
	pg.Restart(t)
	restarted.Store(true)
	poll.Until(t, 20*time.Second, "every replica claiming after the restart", func() error {
		for i := range afterOK {
			if n := afterOK[i].Load(); n < 5 {
				return fmt.Errorf("replica %d made %d claims since, want 5", i, n)
			}
		}
		return nil
	})
	halt()
	t.Logf("%d slots won, %d claims failed with an unknown outcome, %d with a plain error", len(winners), unknown.Load(), plain.Load())
	if unknown.Load()+plain.Load() == 0 {
		t.Error("no claim failed: the restart happened between claims, not during them")
	}

	markers, err := stores[0].History(t.Context(), slotstore.HistoryParams{Job: "restart", Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	byFence := map[int64]time.Time{}
	for _, m := range markers {
		if other, dup := byFence[m.Fence]; dup {
			t.Errorf("fence %d marks both %v and %v", m.Fence, other, m.Slot)
		}
		byFence[m.Fence] = m.Slot
		w := winners[m.Slot]
		if len(w) > 1 {
			t.Errorf("slot %v won %d times: %v", m.Slot, len(w), w)
		}
		if len(w) == 1 && (w[0].fence != m.Fence || m.Holder != fmt.Sprint(w[0].replica) || m.Attempt != 1) {
			t.Errorf("slot %v: won by replica %d with fence %d, marker %+v", m.Slot, w[0].replica, w[0].fence, m)
		}
	}
	for slot := range winners {
		if _, ok := byFence[winners[slot][0].fence]; !ok {
			t.Errorf("slot %v was reported won but has no marker", slot)
		}
	}
}
