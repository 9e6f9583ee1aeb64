package etcdstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// A replica that lost a slot to another waits until the holder's lease
// ends, by the store's marker, to take it over if it was not finished; the
// holder key's watch wakes it early when the holder finishes, releases, or
// its process goes away. After a wake the claim says whether the lease is
// over: if the holder's process died, its lease still runs, and the
// replica waits out what remains of it.
func ExampleStore_WatchHolder() {
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: []string{"http://etcd-0:2379", "http://etcd-1:2379"}})
	if err != nil {
		return
	}
	defer s.Close()
	r := slotstore.ClaimRequest{Job: "invoices", Slot: time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC), Lease: 15 * time.Second,
		TakeoverOnly: true}
	watch := true
	for {
		res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "replica-b", Requests: []slotstore.ClaimRequest{r}})
		if err != nil {
			return
		}
		if res[0].Status != slotstore.Held {
			fmt.Println(res[0].Status) // won (a takeover), finished...
			return
		}
		wctx, cancel := context.WithTimeout(ctx, res[0].Remaining)
		gone := make(<-chan struct{})
		if watch {
			gone = s.WatchHolder(wctx, res[0].Marker.Ref())
		}
		select {
		case <-gone:
			// Claim again now; if the slot is still held, its holder's
			// key is gone: wait out its lease without a watch.
			watch = wctx.Err() != nil
		case <-wctx.Done():
		}
		cancel()
	}
}
