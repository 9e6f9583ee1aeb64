package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/jobs"
)

// A job receives the run's identity: the run key is the same on every
// replica and for every attempt of a slot, so it serves as an idempotency
// key; the fence orders the attempts.
func ExampleRun_Key() {
	reg := jobs.NewRegistry()
	reg.Register("invoices", func(ctx context.Context, run jobs.Run) error {
		fmt.Println(run.Key(), run.Fence, run.Attempt)
		return nil
	})
	fn, _ := reg.Lookup("invoices")
	_ = fn(context.Background(), jobs.Run{
		Job: "invoices", Slot: time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC), Fence: 42, Attempt: 1,
	})
	// Output: invoices@2026-11-29T02:00:00Z 42 1
}

// Params decodes the job's YAML params into a struct; keys the struct lacks
// are an error.
func ExampleRun_Params() {
	run := jobs.Run{Job: "cache-refresh"}.WithParams([]byte("region: eu\n"))
	var p struct {
		Region string `yaml:"region"`
	}
	if err := run.Params(&p); err != nil {
		fmt.Println(err)
	}
	fmt.Println(p.Region)
	// Output: eu
}
