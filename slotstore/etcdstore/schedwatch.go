package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.ScheduleWatcher = (*Store)(nil)

// The watch of schedules asks its member for a progress report every
// schedProgress when it has heard nothing; one that has not answered for
// schedSilence (its member frozen or cut off, which the client's watch,
// reconnecting quietly, does not report) starts again, on whichever member
// the client picks.
const (
	schedProgress = time.Second
	schedSilence  = 3 * time.Second
)

// WatchSchedules implements slotstore.ScheduleWatcher with an etcd watch
// of the sched/ keys, one of which every schedule write puts: a notice per
// watch response with events. A watch that ends (its member lost its
// leader, went away or went quiet) starts again from the revision after
// the last it heard, so no write goes unnoticed; one whose revision was
// compacted meanwhile starts again from the newest, after a notice, as
// writes may have been missed. The channel is also closed when the store
// closes.
func (s *Store) WatchSchedules(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	started := s.begin(ctx, "watch schedules") == nil && s.start(func() {
		defer close(out)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.bg, cancel)
		defer stop()
		var from int64 // the revision to watch from; 0 for the newest
		for wctx.Err() == nil {
			from = s.followSchedules(wctx, from, out)
			pause(wctx, 100*time.Millisecond)
		}
	})
	if !started {
		close(out)
	}
	return out
}

// followSchedules watches the sched/ keys from revision from (0 for the
// newest), sending a notice on out for each response with events, until
// the watch ends or goes quiet or ctx ends, and returns the revision to
// watch from next.
func (s *Store) followSchedules(ctx context.Context, from int64, out chan<- struct{}) int64 {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCreatedNotify()}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from))
	}
	ch := s.client.Watch(wctx, s.k.schedules(), opts...)
	tick := time.NewTicker(schedProgress)
	defer tick.Stop()
	heard := time.Now()
	for {
		select {
		case <-tick.C:
			switch quiet := time.Since(heard); {
			case quiet > schedSilence:
				return from
			case quiet >= schedProgress:
				_ = s.client.RequestProgress(wctx) // its answer is heard as a response
			}
			continue
		case wr, ok := <-ch:
			if !ok {
				return from
			}
			if wr.CompactRevision != 0 {
				notice(out)
				return 0
			}
			if wr.Err() != nil || wr.Canceled {
				return from
			}
			heard = time.Now()
			if wr.Created && from == 0 {
				from = wr.Header.Revision + 1 // the watch began after this revision
			}
			for _, ev := range wr.Events {
				from = max(from, ev.Kv.ModRevision+1)
			}
			if len(wr.Events) > 0 {
				notice(out)
			}
		}
	}
}

// notice sends a notice on out unless one is waiting there already.
func notice(out chan<- struct{}) {
	select {
	case out <- struct{}{}:
	default:
	}
}
