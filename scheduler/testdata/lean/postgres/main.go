// Command postgres is the smallest service that keeps its slots in
// PostgreSQL: it imports package scheduler and links the postgres store
// kind, and no client of another store.
package main

import (
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/postgres"
)

func main() { scheduler.Main(jobs.NewRegistry()) }
