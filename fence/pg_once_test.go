package fence_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
)

// apply records run's slot and inserts value as its effect in one
// transaction, as a job would.
func apply(ctx context.Context, pool *pgxpool.Pool, p fence.PG, run jobs.Run, value string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := p.Once(ctx, tx, run); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+p.Schema+".effects VALUES ($1, $2, $3)", run.Key(), value, run.Fence)
		return err
	})
}

// The failure, and its neighbours: a slot's effect commits once,
// whichever attempt presents it and with whichever fence.
func TestPGOnce(t *testing.T) {
	pool, p := pgFence(t)
	var l testlog.Buffer
	p.Logger = slog.New(slog.NewJSONHandler(&l, nil))
	ctx := t.Context()
	job := unique("invoices")
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	first := runOf(job, slot, 17, 1)
	key := first.Key()
	rejectedBefore, repeatedBefore := rejected(t, job), repeated(t, job)

	// A fresh slot: the effect commits.
	if err := apply(ctx, pool, p, first, "attempt 1"); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	// Its holder died before the slot was recorded finished; attempt 2
	// runs the job again with a higher fence.
	wantApplied(t, apply(ctx, pool, p, runOf(job, slot, 18, 2), "attempt 2"), key, key, 18, 17)
	// A retry of attempt 1 whose first try committed (outcome unknown).
	wantApplied(t, apply(ctx, pool, p, first, "attempt 1 again"), key, key, 17, 17)
	// The next slot of the job is a fresh slot.
	next := runOf(job, slot.Add(time.Hour), 19, 1)
	if err := apply(ctx, pool, p, next, "next slot"); err != nil {
		t.Fatalf("next slot: %v", err)
	}
	if got := strings.Join(effects(t, pool, p, key), ","); got != "attempt 1" {
		t.Errorf("effects of %s: %s, want attempt 1 alone", key, got)
	}
	if got := effects(t, pool, p, next.Key()); len(got) != 1 {
		t.Errorf("effects of %s: %v, want one", next.Key(), got)
	}

	// A stale holder of the next slot, superseded by a newer holder that
	// committed: refused as stale and as applied.
	wantApplied(t, apply(ctx, pool, p, runOf(job, next.Slot, 15, 1), "stale"), next.Key(), next.Key(), 15, 19)

	if got := repeated(t, job) - repeatedBefore; got != 2 {
		t.Errorf("slotcron_fence_repeats_total{resource=%q} grew by %v, want 2", job, got)
	}
	if got := rejected(t, job) - rejectedBefore; got != 1 {
		t.Errorf("slotcron_fence_rejections_total{resource=%q} grew by %v, want 1", job, got)
	}
	if recs := l.Logged(t, "effect already applied"); len(recs) != 2 || recs[0]["level"] != "INFO" || recs[0]["run"] != key {
		t.Errorf("repeat log lines %v, want two at INFO for %s", recs, key)
	}
	if recs := l.Logged(t, "fence rejected"); len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["highest"] != 19.0 {
		t.Errorf("rejection log lines %v, want one at WARN, highest 19", recs)
	}
}

// A caller that ignores the refusal and commits still writes nothing:
// Once aborted the transaction, writes made before it included.
func TestPGOnceRefusalAbortsTransaction(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	run := runOf(unique("job"), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5, 1)
	if err := apply(ctx, pool, p, run, "first"); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO "+p.Schema+".effects VALUES ($1, 'before Once', 6)", run.Key()); err != nil {
		t.Fatal(err)
	}
	run.Fence, run.Attempt = 6, 2
	wantApplied(t, p.Once(ctx, tx, run), run.Key(), run.Key(), 6, 5)
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("commit after a refusal: %v, want pgx.ErrTxCommitRollback", err)
	}
	if got := effects(t, pool, p, run.Key()); len(got) != 1 || got[0] != "first" {
		t.Errorf("effects %v, want [first]", got)
	}
}

// keptFor returns how long after it was recorded the record of key is
// kept, or false when there is none.
func keptFor(t *testing.T, pool *pgxpool.Pool, p fence.PG, key string) (time.Duration, bool) {
	t.Helper()
	var d time.Duration
	err := pool.QueryRow(t.Context(), "SELECT (extract(epoch FROM keep_until - applied_at) * 1e6)::bigint * 1000 FROM "+
		p.Schema+".fence_applied WHERE run_key = $1", key).Scan(&d)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

func TestPGOnceRetention(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	job := unique("keep")

	// By default a record is kept for DefaultRetain, from the later of the
	// call and the slot.
	past := runOf(job, time.Now().Add(-time.Hour).Truncate(time.Second), 1, 1)
	if err := apply(ctx, pool, p, past, "past"); err != nil {
		t.Fatal(err)
	}
	if d, ok := keptFor(t, pool, p, past.Key()); !ok || d != fence.DefaultRetain {
		t.Errorf("a past slot's record is kept %v after it is written (found %v), want %v", d, ok, fence.DefaultRetain)
	}
	future := runOf(job, time.Now().Add(48*time.Hour).Truncate(time.Second), 2, 1)
	if err := apply(ctx, pool, p, future, "future"); err != nil {
		t.Fatal(err)
	}
	if d, ok := keptFor(t, pool, p, future.Key()); !ok || d < fence.DefaultRetain+47*time.Hour || d > fence.DefaultRetain+48*time.Hour {
		t.Errorf("a future slot's record is kept %v after it is written (found %v), want DefaultRetain after the slot", d, ok)
	}

	// With a short retention, Prune deletes the record, and only then may
	// the slot be recorded again.
	short := p
	short.Retain = time.Millisecond
	old := runOf(job, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 3, 1)
	if err := apply(ctx, pool, short, old, "old"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "Prune to delete a record past its 1 ms retention", func() error {
		if _, ok := keptFor(t, pool, p, old.Key()); !ok {
			return nil
		}
		if _, err := p.Prune(ctx, pool); err != nil {
			t.Fatal(err)
		}
		return errors.New("the record is still there")
	})
	if _, ok := keptFor(t, pool, p, past.Key()); !ok {
		t.Fatal("Prune deleted a record still within its retention")
	}
	if err := apply(ctx, pool, short, runOf(job, old.Slot, 4, 2), "old again"); err != nil {
		t.Fatalf("the slot after its record was pruned: %v", err)
	}

	// Under READ COMMITTED each Once prunes expired records as it goes.
	later := runOf(job, old.Slot.Add(time.Minute), 5, 1)
	poll.Until(t, 10*time.Second, "a Once to prune the expired record", func() error {
		if _, ok := keptFor(t, pool, p, old.Key()); !ok {
			return nil
		}
		later.Slot = later.Slot.Add(time.Second)
		if err := apply(ctx, pool, p, later, "later"); err != nil {
			t.Fatal(err)
		}
		return errors.New("the record is still there")
	})
}

// OncePG is PG{}.Once, in DefaultSchema.
func TestOncePG(t *testing.T) {
	pool, _ := pgFence(t)
	ctx := t.Context()
	if err := (fence.PG{}).Ensure(ctx, pool); err != nil {
		t.Fatal(err)
	}
	run := runOf(unique("default"), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 1, 1)
	once := func(run jobs.Run) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return fence.OncePG(ctx, tx, run) })
	}
	if err := once(run); err != nil {
		t.Fatal(err)
	}
	wantApplied(t, once(runOf(run.Job, run.Slot, 2, 2)), run.Key(), run.Key(), 2, 1)
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+fence.DefaultSchema+".fence_applied WHERE run_key = $1", run.Key()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d records in %s (%v), want 1", n, fence.DefaultSchema, err)
	}
}

// A second Once for the same run in one transaction finds the first one's
// row, as documented: the transaction is aborted.
func TestPGOnceTwiceInOneTransaction(t *testing.T) {
	pool, p := pgFence(t)
	ctx := t.Context()
	run := runOf(unique("twice"), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 3, 1)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := p.Once(ctx, tx, run); err != nil {
			return err
		}
		return p.Once(ctx, tx, run)
	})
	wantApplied(t, err, run.Key(), run.Key(), 3, 3)
	if _, ok := keptFor(t, pool, p, run.Key()); ok {
		t.Fatal("the aborted transaction's record was committed")
	}
}

func TestPGOnceInvalid(t *testing.T) {
	slot := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	ctx := t.Context()
	for name, err := range map[string]error{ // never reach the database: tx is nil
		"empty job":          fence.PG{}.Once(ctx, nil, runOf("", slot, 1, 1)),
		"zero slot":          fence.PG{}.Once(ctx, nil, runOf("j", time.Time{}, 1, 1)),
		"zero fence":         fence.PG{}.Once(ctx, nil, runOf("j", slot, 0, 1)),
		"negative retention": fence.PG{Retain: -time.Second}.Once(ctx, nil, runOf("j", slot, 1, 1)),
	} {
		if !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestPGOnceNotEnsured(t *testing.T) {
	pool, _ := pgFence(t)
	p := fence.PG{Schema: "never_ensured"}
	err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return p.Once(t.Context(), tx, runOf("j", time.Now(), 1, 1))
	})
	if err == nil || !strings.Contains(err.Error(), "PG.Ensure") {
		t.Fatalf("once in a schema never ensured: %v, want advice to call PG.Ensure", err)
	}
	if _, err := p.Prune(t.Context(), pool); err == nil || !strings.Contains(err.Error(), "PG.Ensure") {
		t.Fatalf("prune in a schema never ensured: %v, want advice to call PG.Ensure", err)
	}
}
