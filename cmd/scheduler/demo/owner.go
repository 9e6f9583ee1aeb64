package demo

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/jobs"
)

// Owner is a duty that holds its responsibility until its term ends, as a
// websocket fan-out or a stream consumer would: it logs once on taking over,
// every 10 s while it holds, and once on stepping down. Writes it made on
// the duty's behalf would carry d.Fence.
func Owner(ctx context.Context, d jobs.Duty) error {
	log := d.Logger()
	log.Info("owner: taking over")
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("owner: stepping down", "cause", context.Cause(ctx))
			return nil
		case <-t.C:
			log.Info("owner: holding")
		}
	}
}
