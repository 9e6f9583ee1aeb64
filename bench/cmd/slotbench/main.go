// Command slotbench measures slotcron beside robfig/cron v3, gocron v2 and a
// plain timer per job, and prints one markdown table. See bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/slotcron/slotcron/bench/internal/harness"
)

func main() {
	o, err := harness.Parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slotbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := harness.Run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "slotbench:", err)
		os.Exit(1)
	}
}
