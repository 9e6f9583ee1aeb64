package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// Postgres restarted while a replica runs a per-second job: claims fail
// meanwhile, no slot runs twice, and the replica runs slots again once the
// database is back.
func TestPostgresRestartRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres")
	}
	t.Parallel()
	pg := testserver.StartPostgres(t)
	ctx := context.Background()
	st, err := pgstore.New(ctx, pgstore.Options{DSN: pg.DSN(), StatementTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	rec := &recorder{}
	reg := jobs.NewRegistry()
	reg.Register("tick", rec.fn)
	stop := start(t, replica(t, st, "a", `jobs: {tick: {schedule: "*/1 * * * * *", lease: 2s, starting_deadline: 5s}}`, reg))
	time.Sleep(2500 * time.Millisecond)
	before := len(rec.snapshot())
	pg.Restart(t)
	restarted := time.Now()
	time.Sleep(4 * time.Second)
	stop()

	seen := map[time.Time]int{}
	after := 0
	for _, ev := range rec.snapshot() {
		seen[ev.run.Slot]++
		if ev.started.After(restarted) {
			after++
		}
	}
	for slot, n := range seen {
		if n != 1 {
			t.Errorf("slot %v ran %d times", slot, n)
		}
	}
	if before == 0 || after < 2 {
		t.Errorf("%d runs before the restart, %d after it; want runs on both sides", before, after)
	}
}
