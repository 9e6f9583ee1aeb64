package redisstore

import (
	"context"

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.ScheduleWatcher = (*Store)(nil)

// WatchSchedules implements slotstore.ScheduleWatcher with Redis pub/sub:
// every script call that changes a schedule publishes an empty message on
// the channel <prefix>schedules (in a Cluster from whichever master ran
// it; Redis carries it to every node), and the watch subscribes to it with
// a go-redis PubSub, which reconnects and subscribes again by itself after
// a connection is lost. Messages published meanwhile are lost: a reader
// keeps polling ScheduleChanges, less often. The channel is closed, and
// the subscription with it, once ctx is done; a store already closed
// subscribes to nothing.
func (s *Store) WatchSchedules(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	if s.closed.Load() {
		go func() {
			<-ctx.Done()
			close(out)
		}()
		return out
	}
	ps := s.client.Subscribe(ctx, s.schedChannel())
	msgs := ps.Channel()
	go func() {
		defer close(out)
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}
