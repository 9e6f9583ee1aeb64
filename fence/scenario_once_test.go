package fence_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// The failure: the holder of a slot commits its effect and dies
// before it records the slot finished; after its lease another replica
// takes the slot over, attempt 2 with a higher fence, and runs the job
// again. Played for three slots against a store with a manual clock: a
// fence check accepts every repeat (two effects per slot), the once
// helpers refuse every one (one effect per slot).
func TestScenarioCommitThenCrash(t *testing.T) {
	const lease = 15 * time.Second
	pool, p := pgFence(t)
	if err := (fence.PG{}).Ensure(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	srv := testserver.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer rdb.Close()
	rf := fence.Redis{Client: rdb, Prefix: unique("crash") + ":", Logger: p.Logger}

	// Each effect is committed when it returns nil: a row of effects for
	// the Postgres helpers, the key's value for Redis.
	insert := func(ctx context.Context, tx pgx.Tx, run jobs.Run) error {
		_, err := tx.Exec(ctx, "INSERT INTO "+p.Schema+".effects VALUES ($1, $2, $3)", run.Key(), run.Replica, run.Fence)
		return err
	}
	helpers := map[string]func(ctx context.Context, run jobs.Run) error{
		"CheckPG": func(ctx context.Context, run jobs.Run) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if err := fence.CheckPG(ctx, tx, run.Job, run.Fence); err != nil {
					return err
				}
				return insert(ctx, tx, run)
			})
		},
		"PG.Once": func(ctx context.Context, run jobs.Run) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if err := p.Once(ctx, tx, run); err != nil {
					return err
				}
				return insert(ctx, tx, run)
			})
		},
		"Redis.SetOnce": func(ctx context.Context, run jobs.Run) error {
			return rf.SetOnce(ctx, run.Key(), run, []byte(run.Replica), 0)
		},
	}
	want := map[string][]string{"CheckPG": {"A", "B"}, "PG.Once": {"A"}, "Redis.SetOnce": {"A"}}

	for name, effect := range helpers {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			var mu sync.Mutex
			now := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
			// The store has recorded every job since before the first slot.
			store := memstore.New(memstore.Options{Clock: clock, Since: now.Add(-time.Hour)})
			job := unique("crash")

			claim := func(slot time.Time, replica string) jobs.Run {
				t.Helper()
				res, err := store.Claim(ctx, slotstore.ClaimParams{Replica: replica,
					Requests: []slotstore.ClaimRequest{{Job: job, Slot: slot, Lease: lease}}})
				if err != nil || res[0].Status != slotstore.Won {
					t.Fatalf("claim of %s by %s: %v %+v", slot, replica, err, res)
				}
				c := res[0].Claim
				return jobs.Run{Job: job, Slot: c.Slot, Fence: c.Fence, Attempt: c.Attempt, Replica: replica}
			}
			for i := range 3 {
				slot := clock().Truncate(time.Minute)
				a := claim(slot, "A")
				if err := effect(ctx, a); err != nil {
					t.Fatalf("A's effect: %v", err)
				}
				// A dies here, before it records the slot finished.
				advance(lease + time.Second)
				b := claim(slot, "B")
				if b.Attempt != 2 || b.Fence <= a.Fence {
					t.Fatalf("B's claim: attempt %d fence %d, want a takeover of A's fence %d", b.Attempt, b.Fence, a.Fence)
				}
				errB := effect(ctx, b)
				if errB != nil && !errors.Is(errB, fence.ErrApplied) {
					t.Fatalf("B's effect: %v", errB)
				}
				written := effects(t, pool, p, a.Key())
				if name == "Redis.SetOnce" { // A's write, and B's if it was accepted
					v, _, err := rf.Get(ctx, a.Key())
					if err != nil {
						t.Fatal(err)
					}
					if written = []string{"A"}; errB == nil {
						written = append(written, "B")
					}
					if last := written[len(written)-1]; string(v) != last {
						t.Fatalf("the key holds %q, want %s's value", v, last)
					}
				}
				if fmt.Sprint(written) != fmt.Sprint(want[name]) {
					t.Errorf("slot %d: effects by %v, want %v", i, written, want[name])
				}
				if err := store.Finish(ctx, slotstore.FinishParams{Ref: slotstore.Ref{Job: job, Slot: slot, Fence: b.Fence}, Outcome: slotstore.Succeeded}); err != nil {
					t.Fatalf("B's finish: %v", err)
				}
				advance(time.Minute)
			}
		})
	}
}
