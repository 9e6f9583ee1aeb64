package scheduler

// The tests of this package configure every store kind slotcron ships, so
// they link them all, as the reference binary does.
import (
	_ "github.com/slotcron/slotcron/scheduler/etcd"
	_ "github.com/slotcron/slotcron/scheduler/postgres"
	_ "github.com/slotcron/slotcron/scheduler/redis"
)
