package demo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// The ledger job writes its row and completes its slot together: with the
// slot's current fence both commit; with a fence the slot has moved past,
// neither does.
func TestLedgerCompletesInItsTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres server")
	}
	dsn := testserver.StartPostgres(t).CreateDatabase(t)
	ctx := context.Background()
	st, err := pgstore.New(ctx, pgstore.Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ledger := new(Ledger)
	defer ledger.Close()

	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	claim := func(replica string, lease time.Duration) slotstore.Claim {
		res, err := st.Claim(ctx, slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{{Job: "ledger", Slot: slot, Lease: lease}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim by %s: %v %+v", replica, err, res)
		}
		return res[0].Claim
	}
	runOf := func(c slotstore.Claim, replica string) jobs.Run {
		return jobs.Run{Job: "ledger", Slot: c.Slot, Fence: c.Fence, Attempt: c.Attempt, Replica: replica}.
			WithParams([]byte("dsn: " + dsn + "\n"))
	}

	stale := claim("a", 200*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a's lease ends; b takes the slot over
	current := claim("b", time.Minute)

	if err := ledger.Run(ctx, runOf(stale, "a")); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Fatalf("stale run: %v, want ErrLeaseLost", err)
	}
	if n := rows(t, ctx, dsn); n != 0 {
		t.Fatalf("the stale run's row was committed (%d rows)", n)
	}
	if err := ledger.Run(ctx, runOf(current, "b")); err != nil {
		t.Fatalf("current run: %v", err)
	}
	if n := rows(t, ctx, dsn); n != 1 {
		t.Fatalf("%d rows after the current run, want 1", n)
	}
	// The engine's own Finish afterwards is a no-op success.
	if err := st.Finish(ctx, slotstore.FinishParams{Ref: current.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatalf("finish after CompleteTx: %v", err)
	}
	hist, err := st.History(ctx, slotstore.HistoryParams{Job: "ledger"})
	if err != nil || len(hist) != 1 || hist[0].State != slotstore.StateDone || hist[0].Fence != current.Fence {
		t.Fatalf("history %+v, %v", hist, err)
	}
}

func rows(t *testing.T, ctx context.Context, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM slotcron_demo_ledger`).Scan(&n); err != nil {
		var missing bool
		_ = conn.QueryRow(ctx, `SELECT to_regclass('slotcron_demo_ledger') IS NULL`).Scan(&missing)
		if missing {
			return 0
		}
		t.Fatal(err)
	}
	return n
}
