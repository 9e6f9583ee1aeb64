package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/fence"
)

// A holder superseded while it was paused writes with its old fence, and
// the resource refuses. Memory stands in for Redis here: both are a
// fence.KV, and the calls are the same.
func ExampleMemory() {
	ctx := context.Background()
	var kv fence.KV = &fence.Memory{Logger: slog.New(slog.DiscardHandler)}

	// A holds the slot with fence 17 and writes.
	fmt.Println(kv.Set(ctx, "report", 17, []byte("draft by A"), 0))
	// A pauses; its lease ends; B claims with fence 18 and writes.
	fmt.Println(kv.Set(ctx, "report", 18, []byte("final by B"), 0))
	// A wakes and writes again with fence 17.
	err := kv.Set(ctx, "report", 17, []byte("late draft by A"), 0)
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Printf("rejected: fence %d, highest %d\n", stale.Fence, stale.Highest)
	}
	v, f, _ := kv.Get(ctx, "report")
	fmt.Printf("%s (fence %d)\n", v, f)
	// Output:
	// <nil>
	// <nil>
	// rejected: fence 17, highest 18
	// final by B (fence 18)
}

// A job writes its effect and checks its fence in one transaction: either
// both commit or neither does. (It needs a database; this example only
// shows the calls.)
func ExampleCheckPG() {
	job := func(ctx context.Context, db *pgx.Conn, fenceToken int64) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if err := fence.CheckPG(ctx, tx, "invoices", fenceToken); err != nil {
				return err // errors.Is(err, fence.ErrStale): a newer holder wrote; roll back
			}
			_, err := tx.Exec(ctx, "INSERT INTO invoices (period, fence) VALUES (date_trunc('month', now()), $1)", fenceToken)
			return err
		})
	}
	_ = job
}
