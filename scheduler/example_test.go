package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// The programmatic form: a Config built in code (or loaded with Load), a
// registry, and Run until the context ends.
func ExampleNew() {
	reg := jobs.NewRegistry()
	ran := make(chan string, 1)
	reg.Register("report", func(ctx context.Context, run jobs.Run) error {
		select {
		case ran <- run.Job:
		default:
		}
		return nil
	})
	cfg := &scheduler.Config{
		Replica: "example",
		Jobs:    map[string]scheduler.JobConfig{"report": {Schedule: "*/1 * * * * *"}},
	}
	s, err := scheduler.New(cfg, reg, scheduler.WithStore(memstore.New(memstore.Options{})),
		scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	go func() { fmt.Println("ran", <-ran); cancel() }()
	if err := s.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: ran report
}
