package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
)

// WatchHolder returns a channel that is closed when ref's claim may have
// stopped holding its slot: when the slot's holder key, which the claim
// put under its process's etcd lease, is gone or names a later claim.
// That happens when the slot finishes, is released, replaced, abandoned or
// taken over, and when the holder's process lease expires (the process
// died or was cut off from the cluster's quorum for the lease's TTL). The
// channel is closed at once when the key is already gone, or has been
// since the claim; and also when ctx ends, the store closes, or the watch
// fails: a closed channel means "look again", not "the lease is over".
//
// It only wakes a waiting successor early. Whether the slot's lease has
// ended is still judged by its marker's LeaseEnd, by the clock of the
// replica that claims (the package documentation says why): a claim made
// when the channel closes answers Held, with the time that remains, if the
// holder's process went away while its lease runs, and the successor
// waits that long. The watch costs no round trip while the holder keeps
// its slot.
func (s *Store) WatchHolder(ctx context.Context, ref slotstore.Ref) <-chan struct{} {
	gone := make(chan struct{})
	started := s.begin(ctx, "watch holder") == nil && s.start(func() {
		defer close(gone)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.bg, cancel)
		defer stop()
		s.followHolder(wctx, ref)
	})
	if !started {
		close(gone)
	}
	return gone
}

// followHolder returns once ref's holder key is gone or names another
// claim, or ctx ends, or the watch fails.
func (s *Store) followHolder(ctx context.Context, ref slotstore.Ref) {
	key := s.k.holder(ref.Job, ref.Slot.UTC().Truncate(time.Second))
	resp, err := s.get(ctx, "watch holder", key)
	if err != nil || len(resp.Kvs) == 0 || holderFence(resp.Kvs[0], s.fenceBase.Load()) != ref.Fence {
		return
	}
	wctx := clientv3.WithRequireLeader(ctx)
	for wr := range s.client.Watch(wctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
		if wr.Err() != nil || wr.Canceled {
			return
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete || holderFence(ev.Kv, s.fenceBase.Load()) != ref.Fence {
				return
			}
		}
	}
}
