package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

const (
	sharedSlots    = 20
	sharedStores   = 4 // Stores in this process, each with its own connections
	sharedChildren = 2 // processes re-running this test binary
	claimers       = sharedStores + sharedChildren
)

// claimerName names claimer k: the Stores of this process come first.
func claimerName(k int) string {
	if k < sharedStores {
		return fmt.Sprintf("store%d", k)
	}
	return fmt.Sprintf("child%d", k-sharedStores)
}

// sharedResult is one claim result as a claimer of TestSharedFile saw it.
type sharedResult struct {
	Replica, Job, Holder string
	Slot, ClaimedAt      int64
	Status               slotstore.Status
	Fence                int64
}

// claimRound claims shared slot i of jobs a and b for claimer k, both jobs
// in one batch.
func claimRound(ctx context.Context, s *sqlitestore.Store, k, i int) ([]sharedResult, error) {
	replica := claimerName(k)
	sl := slot.Add(time.Duration(i) * time.Minute)
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{
		{Job: "a", Slot: sl, Lease: time.Hour}, {Job: "b", Slot: sl, Lease: time.Hour},
	}})
	if err != nil {
		return nil, fmt.Errorf("%s: claim %v: %w", replica, sl, err)
	}
	out := make([]sharedResult, len(res))
	for j, r := range res {
		m := r.Marker
		out[j] = sharedResult{replica, m.Job, m.Holder, m.Slot.Unix(), m.ClaimedAt.UnixMilli(), r.Status, m.Fence}
	}
	return out, nil
}

func openShared(t *testing.T, path string) *sqlitestore.Store {
	return openWith(t, sqlitestore.Options{Path: path, BusyTimeout: 30 * time.Second})
}

// TestSharedFile: Stores with their own connections, in this process and in
// child processes, claim the same slots of one file at once; each slot has
// exactly one winner, and fences are unique and follow claim order.
func TestSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	var children []*child
	for k := sharedStores; k < claimers; k++ {
		children = append(children, startChild(t, path, k))
	}
	var stores []*sqlitestore.Store
	for range sharedStores {
		stores = append(stores, openShared(t, path))
	}

	var (
		mu      sync.Mutex
		results []sharedResult
	)
	collect := func(rs []sharedResult, err error) {
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		results = append(results, rs...)
	}
	// Every claimer claims slot i at once; the next round waits for all.
	for i := range sharedSlots {
		var wg sync.WaitGroup
		for _, c := range children {
			wg.Go(func() { collect(c.round(i)) })
		}
		for k, s := range stores {
			wg.Go(func() { collect(claimRound(t.Context(), s, k, i)) })
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	for _, c := range children {
		if err := c.stop(); err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, c.stderr.String())
		}
	}
	checkShared(t, stores[0], results)
}
