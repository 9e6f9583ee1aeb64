package etcdstore

import "context"

// FollowSchedules runs one watch of the schedules from revision from, as
// WatchSchedules does, and returns the revision it would watch from next.
func (s *Store) FollowSchedules(ctx context.Context, from int64, out chan<- struct{}) int64 {
	return s.followSchedules(ctx, from, out)
}
