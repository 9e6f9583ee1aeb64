package demo

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
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
	st, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ledger := new(Ledger)
	defer ledger.Close()

	// A slot no older than the job's generation, which begins at the
	// first claim: an older slot's first claim is refused as possibly
	// lost.
	slot := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	claim := func(replica string, lease time.Duration) slotstore.Claim {
		res, err := st.Claim(ctx, slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{{Job: "ledger", Slot: slot, Lease: lease}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim by %s: %v %+v", replica, err, res)
		}
		return res[0].Claim
	}
	runOf := func(c slotstore.Claim, replica string) jobs.Run {
		return jobs.Run{Job: "ledger", Slot: c.Slot, Fence: c.Fence, Attempt: c.Attempt, Replica: replica}.
			WithParams([]byte("dsn: " + dsn + "\n")).WithStore(st)
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

// With effect "once" the store is elsewhere (here in memory, on a manual
// clock): a holder writes the row and dies before it records the slot
// finished; its successor takes the slot over and runs the job again, and
// the row is not written twice, nor by the first holder waking up late.
func TestLedgerOnceWithTheStoreElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres server")
	}
	dsn := testserver.StartPostgres(t).CreateDatabase(t)
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	st := memstore.New(memstore.Options{Clock: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		Since: now.Add(-time.Hour)}) // it has recorded the job since before its first slot
	ledger := new(Ledger)
	defer ledger.Close()

	const lease = 15 * time.Second
	claim := func(slot time.Time, replica string) jobs.Run {
		t.Helper()
		res, err := st.Claim(ctx, slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{{Job: "ledger", Slot: slot, Lease: lease}}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim by %s: %v %+v", replica, err, res)
		}
		c := res[0].Claim
		return jobs.Run{Job: "ledger", Slot: c.Slot, Fence: c.Fence, Attempt: c.Attempt, Replica: replica}.
			WithParams([]byte("dsn: " + dsn + "\neffect: once\n"))
	}
	slot := now
	a := claim(slot, "a")
	if err := ledger.Run(ctx, a); err != nil {
		t.Fatalf("a's run: %v", err)
	}
	// a dies before it records the slot finished; its lease ends.
	mu.Lock()
	now = now.Add(lease + time.Second)
	mu.Unlock()
	b := claim(slot, "b")
	if b.Attempt != 2 || b.Fence <= a.Fence {
		t.Fatalf("b's claim: attempt %d fence %d, want a takeover of fence %d", b.Attempt, b.Fence, a.Fence)
	}
	if err := ledger.Run(ctx, b); err != nil {
		t.Fatalf("b's run: %v, want nil (the row is written)", err)
	}
	if err := ledger.Run(ctx, a); err != nil { // a wakes up late and runs again
		t.Fatalf("a's late run: %v, want nil (the row is written)", err)
	}
	if n := rows(t, ctx, dsn); n != 1 {
		t.Fatalf("%d rows for one slot, want 1", n)
	}
	var replica string
	if err := queryRow(t, ctx, dsn, `SELECT replica FROM slotcron_demo_ledger`, &replica); err != nil || replica != "a" {
		t.Fatalf("the row was written by %q (%v), want a", replica, err)
	}
	// The next slot gets its own row.
	if err := ledger.Run(ctx, claim(slot.Add(time.Minute), "b")); err != nil {
		t.Fatalf("next slot: %v", err)
	}
	if n := rows(t, ctx, dsn); n != 2 {
		t.Fatalf("%d rows for two slots, want 2", n)
	}
}

func TestLedgerUnknownEffect(t *testing.T) {
	ledger := new(Ledger)
	defer ledger.Close()
	run := jobs.Run{Job: "ledger", Slot: time.Now(), Fence: 1}.
		WithParams([]byte("dsn: postgres://127.0.0.1:1/none\neffect: twice\n"))
	if err := ledger.Run(context.Background(), run); err == nil || !strings.Contains(err.Error(), `"twice"`) {
		t.Fatalf("effect twice: %v, want an error naming it", err)
	}
}

func queryRow(t *testing.T, ctx context.Context, dsn, sql string, dest ...any) error {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest...)
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
