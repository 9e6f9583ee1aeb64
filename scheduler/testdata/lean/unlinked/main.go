// Command unlinked hands the scheduler a Redis store of its own with
// WithStore but does not import the redis kind: New must refuse it, naming
// the import, rather than elect its duties somewhere else than replicas
// that link the kind.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

func main() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	st, err := redisstore.New(c, redisstore.Options{})
	if err != nil {
		fmt.Println("redisstore.New:", err)
		os.Exit(1)
	}
	reg := jobs.NewRegistry()
	reg.RegisterDuty("fanout", func(ctx context.Context, _ jobs.Duty) error { <-ctx.Done(); return nil })
	cfg, err := scheduler.Parse("inline.yaml", []byte("duties: {fanout: {lease: 5s}}\n"))
	if err != nil {
		fmt.Println("parse:", err)
		os.Exit(1)
	}
	if _, err := scheduler.New(cfg, reg, scheduler.WithStore(st)); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	fmt.Println("accepted")
}
