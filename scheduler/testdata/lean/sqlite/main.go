// Command sqlite is the smallest service that keeps its slots in SQLite:
// it imports package scheduler alone, and so links no client of another
// store.
package main

import (
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
)

func main() { scheduler.Main(jobs.NewRegistry()) }
