// Command scheduler is slotcron's reference binary: a few demo jobs and the
// whole CLI. Copy it into your service and register your own jobs.
package main

import (
	"github.com/slotcron/slotcron/cmd/scheduler/demo"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
)

func main() {
	reg := jobs.NewRegistry()
	demo.Register(reg)
	scheduler.Main(reg)
}
