package redisstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// TestFencesSurviveRestart: Redis restarts empty (no persistence) in the
// middle of a run of claims; every fence issued after the restart is higher
// than every fence issued before it, although the counters were lost.
func TestFencesSurviveRestart(t *testing.T) {
	r := testserver.StartRedis(t)
	s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, DialTimeout: time.Second, ReadTimeout: time.Second})

	// One batch of 1,000 slots first: it puts the job's counter as far
	// ahead of Redis's clock as a batch can.
	first := claim(t, s, "r1", batch("f", 0, 1000, time.Minute)...)
	won(t, first)

	type issued struct {
		fence         int64
		before, after bool // returned before the restart began, or sent after it ended
	}
	var (
		restarting, restarted atomic.Bool
		stop                  = make(chan struct{})
		mu                    sync.Mutex
		fences                []issued
		failures              int
		wg                    sync.WaitGroup
	)
	progress := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		b, a := 0, 0
		for _, f := range fences {
			if f.before {
				b++
			}
			if f.after {
				a++
			}
		}
		return b, a
	}
	wg.Go(func() {
		// One claimer, claiming one slot after another: every fence it is
		// given must exceed the one before, restart or not.
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			after := restarted.Load()
			res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: batch("f", i, 1, time.Minute)})
			before := !restarting.Load()
			mu.Lock()
			if err != nil {
				failures++
			} else if res[0].Status == slotstore.Won {
				fences = append(fences, issued{res[0].Claim.Fence, before, after})
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
	halt := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(halt) // when a wait below fails
	poll.Until(t, 10*time.Second, "20 claims won before the restart", func() error {
		if b, _ := progress(); b < 20 {
			return fmt.Errorf("%d won", b)
		}
		return nil
	})
	restarting.Store(true)
	r.Restart(t)
	restarted.Store(true)
	poll.Until(t, 10*time.Second, "20 claims won after the restart", func() error {
		if _, a := progress(); a < 20 {
			return fmt.Errorf("%d won", a)
		}
		return nil
	})
	halt()

	var maxBefore, minAfter int64 = first[len(first)-1].Claim.Fence, 1<<63 - 1
	last := maxBefore
	for i, f := range fences {
		if f.fence <= last {
			t.Errorf("claim %d: fence %d after fence %d", i, f.fence, last)
		}
		last = f.fence
		if f.before {
			maxBefore = max(maxBefore, f.fence)
		}
		if f.after {
			minAfter = min(minAfter, f.fence)
		}
	}
	if minAfter <= maxBefore {
		t.Errorf("lowest fence after the restart %d, highest before %d", minAfter, maxBefore)
	}
	t.Logf("%d fences, %d claims failed during the restart; highest before %d, lowest after %d (+%d µs)",
		len(fences), failures, maxBefore, minAfter, minAfter-maxBefore)

	// The restart lost the data: the first slot claimed is new again, and
	// its fence still exceeds every fence before.
	again := claim(t, s, "r1", slotstore.ClaimRequest{Job: "f", Slot: first[0].Claim.Slot, Lease: time.Minute})[0]
	if again.Status != slotstore.Won || again.Claim.Attempt != 1 || again.Claim.Fence <= last {
		t.Errorf("claim of %s after the restart: %v %+v, want a first claim with a fence above %d",
			first[0].Claim.Slot, again.Status, again.Claim, last)
	}
}
