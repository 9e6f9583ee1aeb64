package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/jobs"
)

// A holder stores the slot's report and dies before the slot is recorded
// finished; its successor runs the job again with a higher fence, and the
// report is not stored a second time. Memory stands in for Redis here:
// both are a fence.KV, and the calls are the same.
func ExampleMemory_SetOnce() {
	ctx := context.Background()
	var kv fence.KV = &fence.Memory{Logger: slog.New(slog.DiscardHandler)}
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

	// Attempt 1 holds the slot with fence 17, stores the report, and dies.
	a := jobs.Run{Job: "report", Slot: slot, Fence: 17, Attempt: 1}
	fmt.Println(kv.SetOnce(ctx, "report:2026-11-29", a, []byte("report by attempt 1"), 0))
	// Its lease ends; attempt 2 claims the slot with fence 18 and runs again.
	b := jobs.Run{Job: "report", Slot: slot, Fence: 18, Attempt: 2}
	err := kv.SetOnce(ctx, "report:2026-11-29", b, []byte("report by attempt 2"), 0)
	var applied *fence.AppliedError
	if errors.As(err, &applied) {
		fmt.Printf("already applied: %s with fence %d\n", applied.Key, applied.Applied)
	}
	v, _, _ := kv.Get(ctx, "report:2026-11-29")
	fmt.Printf("%s\n", v)
	// Output:
	// <nil>
	// already applied: report@2026-11-29T02:00:00Z with fence 17
	// report by attempt 1
}

// A job writes its effect and records its slot in one transaction: the
// effect commits once per slot, whichever attempt runs it. (It needs a
// database; this example only shows the calls.)
func ExampleOncePG() {
	var pool *pgxpool.Pool // at start-up: fence.PG{}.Ensure(ctx, pool)
	job := func(ctx context.Context, run jobs.Run) error {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := fence.OncePG(ctx, tx, run); err != nil {
				return err // the transaction is aborted: nothing below commits
			}
			_, err := tx.Exec(ctx, "INSERT INTO invoices (run_key, fence) VALUES ($1, $2)", run.Key(), run.Fence)
			return err
		})
		if errors.Is(err, fence.ErrApplied) {
			return nil // an earlier attempt, or a newer holder, committed the slot's effect
		}
		return err
	}
	_ = job
}

// The Redis form: the value and the slot's record in one Lua script.
// (It needs a server; this example only shows the calls.)
func ExampleRedis_SetOnce() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	job := func(ctx context.Context, run jobs.Run) error {
		report := []byte("…")
		err := fence.Redis{Client: rdb}.SetOnce(ctx, "report:latest", run, report, 24*time.Hour)
		if errors.Is(err, fence.ErrApplied) || errors.Is(err, fence.ErrStale) {
			return nil // stored once for this slot already, or superseded by a newer run's report
		}
		return err
	}
	_ = job
}
