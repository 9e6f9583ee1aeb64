package etcdstore

import "context"

// FollowSchedules runs one watch of the schedules from revision from, as
// WatchSchedules does, and returns the revision it would watch from next.
func (s *Store) FollowSchedules(ctx context.Context, from int64, out chan<- struct{}) int64 {
	return s.followSchedules(ctx, from, out)
}

// HoldGroup makes the store's fenced mutations wait, as they do while
// another's transaction is out, until release: they then go together.
func (s *Store) HoldGroup() (release func()) {
	gr := &s.group
	gr.mu.Lock()
	gr.leaders++
	gr.mu.Unlock()
	return func() {
		gr.mu.Lock()
		defer gr.mu.Unlock()
		gr.resign()
	}
}

// GroupWaiting is how many fenced mutations wait to go.
func (s *Store) GroupWaiting() int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return len(s.group.pending)
}
