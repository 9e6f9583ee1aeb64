// Command scheduler is slotcron's reference binary: a few demo jobs and the
// whole CLI, with every store kind slotcron ships and tracing linked in.
// Copy it into your service, register your own jobs, and keep only the
// store kinds you use: each import below links one (sqlite and memory need
// none); scheduler/otlp links the tracing block's exporter.
package main

import (
	"github.com/slotcron/slotcron/cmd/scheduler/demo"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/etcd"
	_ "github.com/slotcron/slotcron/scheduler/otlp"
	_ "github.com/slotcron/slotcron/scheduler/postgres"
	_ "github.com/slotcron/slotcron/scheduler/redis"
)

func main() {
	reg := jobs.NewRegistry()
	demo.Register(reg)
	scheduler.Main(reg)
}
