package pgstore_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// enrollOne enrolls job and returns when its generation began.
func enrollOne(t *testing.T, s slotstore.Store, job string) time.Time {
	t.Helper()
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{job}})
	if err != nil || len(gens) != 1 || gens[0].Job != job {
		t.Fatalf("enroll %s: %v, %v", job, gens, err)
	}
	return gens[0].Born
}

// runSlot claims job@slot for replica, fails the test unless it won, and
// records the run succeeded.
func runSlot(t *testing.T, s slotstore.Store, replica, job string, slot time.Time) slotstore.Claim {
	t.Helper()
	res := claimOne(t, s, replica, slotstore.ClaimRequest{Job: job, Slot: slot, Lease: time.Minute})
	if res.Status != slotstore.Won {
		t.Fatalf("claim %s@%v: %v (marker %+v)", job, slot, res.Status, res.Marker)
	}
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: res.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatalf("finish %s@%v: %v", job, slot, err)
	}
	return res.Claim
}

// wantDataLoss fails the test unless a claim of job@slot is answered
// skipped for data loss, never won.
func wantDataLoss(t *testing.T, s slotstore.Store, what, job string, slot time.Time) {
	t.Helper()
	res := claimOne(t, s, "r9", slotstore.ClaimRequest{Job: job, Slot: slot, Lease: time.Minute})
	if res.Status != slotstore.Skipped || res.Marker.Reason != slotstore.ReasonDataLoss || res.Marker.Fence != 0 {
		t.Errorf("%s: claim of %s@%v: %v (marker %+v), want skipped for data loss", what, job, slot, res.Status, res.Marker)
	}
}

// firstSlot is the first slot (a whole second) that the generation born at
// born covers: the first at or after born + slotstore.ClaimLead.
func firstSlot(born time.Time) time.Time {
	return slotstore.Generation{Born: born}.From().UTC().Add(time.Second - time.Nanosecond).Truncate(time.Second)
}

// pastSlots returns two consecutive slots of the generation born at born,
// the first it covers and the next, once the later has passed by the
// database's clock, which it polls through pool: the engine claims a slot
// at its time.
func pastSlots(t *testing.T, pool *pgxpool.Pool, born time.Time) (time.Time, time.Time) {
	t.Helper()
	first := firstSlot(born)
	later := first.Add(time.Second)
	poll.Until(t, 10*time.Second, fmt.Sprintf("the database's clock past %v", later), func() error {
		var now time.Time
		if err := pool.QueryRow(t.Context(), "SELECT clock_timestamp()").Scan(&now); err != nil {
			t.Fatal(err)
		}
		if !now.After(later) {
			return fmt.Errorf("it reads %v", now)
		}
		return nil
	})
	return first, later
}

// TestGenerationClaimLead: a generation covers the slots from
// slotstore.ClaimLead after it began, for a replica claims a slot from
// ClaimLead before it. A first claim of the last slot before then (at or
// after the generation began) is recorded skipped for data loss, whether
// the set-based statement sees it alone or it is decided one by one beside
// another slot of its job, and the first slot from then on is won; a
// Backfill claim wins a slot recorded skipped as missed only from then on.
func TestGenerationClaimLead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	jobs := []string{"alone", "batch", "backfill"}
	gens, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: jobs})
	if err != nil || len(gens) != len(jobs) {
		t.Fatalf("enroll: %v, %v", gens, err)
	}
	// early: the last slot the generation does not cover, at or after Born.
	slots := func(g slotstore.Generation) (early, first time.Time) {
		first = firstSlot(g.Born)
		early = first.Add(-time.Second)
		if early.Before(g.Born) || g.Covers(early) || !g.Covers(first) {
			t.Fatalf("generation born at %v: slots %v and %v", g.Born, early, first)
		}
		return early, first
	}

	early, first := slots(gens[0])
	wantDataLoss(t, s, "the slot less than ClaimLead after the generation began, alone", "alone", early)
	if res := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "alone", Slot: first, Lease: time.Minute}); res.Status != slotstore.Won {
		t.Errorf("claim of %v, ClaimLead or more after the generation began at %v: %v (marker %+v), want won",
			first, gens[0].Born, res.Status, res.Marker)
	}

	early, first = slots(gens[1])
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
		{Job: "batch", Slot: first, Lease: time.Minute}, {Job: "batch", Slot: early, Lease: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != slotstore.Won {
		t.Errorf("batch: claim of %v, ClaimLead or more after the generation began at %v: %v, want won", first, gens[1].Born, res[0].Status)
	}
	if res[1].Status != slotstore.Skipped || res[1].Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("batch: claim of %v, less than ClaimLead after the generation began at %v: %v %q, want skipped for data loss",
			early, gens[1].Born, res[1].Status, res[1].Marker.Reason)
	}

	early, first = slots(gens[2])
	if _, err := s.Skip(ctx, slotstore.SkipParams{Replica: "r1", Requests: []slotstore.SkipRequest{
		{Job: "backfill", Slot: early, Reason: "missed"}, {Job: "backfill", Slot: first, Reason: "missed"}}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []slotstore.Marker{findMarker(t, s, "backfill", early), findMarker(t, s, "backfill", first)} {
		if m.State != slotstore.StateSkipped || m.Reason != "missed" {
			t.Fatalf("skip of %v: %+v", m.Slot, m)
		}
	}
	if r := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "backfill", Slot: early, Lease: time.Minute, Backfill: true}); r.Status != slotstore.Skipped || r.Marker.Reason != "missed" {
		t.Errorf("backfill of %v, skipped, less than ClaimLead after the generation began at %v: %v (marker %+v), want skipped as missed",
			early, gens[2].Born, r.Status, r.Marker)
	}
	if r := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "backfill", Slot: first, Lease: time.Minute, Backfill: true}); r.Status != slotstore.Won || !r.Marker.Backfill {
		t.Errorf("backfill of %v, skipped, ClaimLead or more after the generation began at %v: %v (marker %+v), want won",
			first, gens[2].Born, r.Status, r.Marker)
	}
}

// TestGenerationSchemaDropped: a schema dropped while it holds markers and
// created again by the migrations knows none of its old slots; its jobs'
// generations begin anew, so a slot that ran before the drop is recorded
// skipped for data loss, not run again, and later slots run with fences
// above every fence issued before.
func TestGenerationSchemaDropped(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := testserver.SharedPostgres(t).DSN()
	s := newStore(t)
	pool := newPool(t, dsn)
	const job = "dropped"
	ran, running := pastSlots(t, pool, enrollOne(t, s, job))
	done := runSlot(t, s, "r1", job, ran)
	held := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: running, Lease: time.Hour})

	if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{s.Schema()}.Sanitize()+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
		{Job: job, Slot: ran, Lease: time.Minute}}}); err == nil || errors.Is(err, slotstore.ErrOutcomeUnknown) {
		t.Errorf("claim in a dropped schema: %v, want a plain error", err)
	}
	// A replica starting now creates the schema again.
	s2, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: s.Schema(), PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	wantDataLoss(t, s2, "after the drop", job, ran)
	wantDataLoss(t, s, "after the drop, by a replica that kept running", job, running)
	if born := enrollOne(t, s, job); !born.After(running) {
		t.Errorf("generation after the drop began at %v, not after the slots run before it", born)
	}
	next := runSlot(t, s2, "r2", job, slot(0))
	if next.Fence <= max(done.Fence, held.Claim.Fence) {
		t.Errorf("fence %d after the drop, want above %d", next.Fence, max(done.Fence, held.Claim.Fence))
	}
}

// TestGenerationRestoredFromDump: a schema restored (pg_restore --clean)
// from a logical backup taken before more slots finished runs none of
// them again: the restored generation rows are recognised as not written
// by the cluster's own transactions, the generations begin anew, and the
// claims of the slots the backup lost are recorded skipped for data loss.
func TestGenerationRestoredFromDump(t *testing.T) {
	t.Parallel()
	pgDump, pgRestore := pgTool(t, "pg_dump"), pgTool(t, "pg_restore")
	dsn := testserver.SharedPostgres(t).DSN()
	s := newStore(t)
	const job = "restored"
	born := enrollOne(t, s, job)
	before, after := pastSlots(t, newPool(t, dsn), born)
	runSlot(t, s, "r1", job, before)

	backup := filepath.Join(t.TempDir(), "backup.dump")
	command(t, pgDump, "--dbname="+dsn, "--format=custom", "--schema="+s.Schema(), "--file="+backup)
	lost := runSlot(t, s, "r1", job, after)
	command(t, pgRestore, "--dbname="+dsn, "--clean", "--if-exists", "--single-transaction", backup)

	if _, ok := find(t, s, job, after); ok {
		t.Fatal("the restore kept the marker of the slot finished after the backup")
	}
	wantDataLoss(t, s, "after the restore", job, after)
	if res := claimOne(t, s, "r2", slotstore.ClaimRequest{Job: job, Slot: before, Lease: time.Minute}); res.Status != slotstore.Finished {
		t.Errorf("claim of the slot the backup holds as done: %v", res.Status)
	}
	if again := enrollOne(t, s, job); !again.After(after) {
		t.Errorf("generation after the restore began at %v (first at %v), not after the slots the backup lost", again, born)
	}
	next := runSlot(t, s, "r2", job, slot(0))
	if next.Fence <= lost.Fence {
		t.Errorf("fence %d after the restore, want above %d", next.Fence, lost.Fence)
	}
}

// TestGenerationRowProvenance: a generation row keeps its generation
// through maintenance that rewrites or freezes it (its raw xmin is kept)
// and when only the epoch of its recorded transaction differs, as across
// an xid wraparound; a row written by anyone else, or by another cluster,
// begins the generation anew. Not parallel: VACUUM FREEZE freezes only
// rows older than every open transaction.
func TestGenerationRowProvenance(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	table := pgx.Identifier{s.Schema(), "generations"}.Sanitize()
	const job = "provenance"
	born := enrollOne(t, s, job)
	exec := func(sql string) {
		t.Helper()
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, job)
		}
		if _, err := pool.Exec(ctx, strings.ReplaceAll(sql, "%s", table), args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	kept := func(what string) {
		t.Helper()
		if got := enrollOne(t, s, job); !got.Equal(born) {
			t.Errorf("after %s: generation began at %v, want %v", what, got, born)
		}
	}
	frozen := func() bool {
		t.Helper()
		var f bool
		err := pool.QueryRow(ctx, `SELECT bool_and((t_infomask & 768) = 768) FROM heap_page_items(get_raw_page($1, 0))
			WHERE t_xmax = 0 OR t_infomask & 128 <> 0`, s.Schema()+".generations").Scan(&f)
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return f
	}
	inspect := true
	if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect"); err != nil {
		t.Logf("without pageinspect (%v), freezing is not checked", err)
		inspect = false
	}

	exec("VACUUM (FREEZE) %s")
	if inspect && !frozen() {
		t.Error("VACUUM FREEZE did not freeze the generation row")
	}
	kept("VACUUM FREEZE")
	exec("VACUUM (FULL, FREEZE) %s")
	kept("VACUUM FULL")
	exec("CLUSTER %s USING generations_pkey")
	kept("CLUSTER")
	// Written by this cluster in another epoch of the transaction counter.
	exec("UPDATE %s SET xid = pg_current_xact_id()::text::bigint + (1::bigint << 32) WHERE job = $1")
	kept("a write in another epoch")

	// Written by an operator: the generation begins anew.
	exec("UPDATE %s SET born = born - interval '1 day' WHERE job = $1")
	again := enrollOne(t, s, job)
	if !again.After(born) {
		t.Errorf("after an operator's write: generation began at %v, want after %v", again, born)
	}
	// Written by another cluster, by a transaction whose id happens to be
	// the one recorded: begins anew too.
	born = again
	exec("UPDATE %s SET xid = pg_current_xact_id()::text::bigint, sysid = sysid # 1 WHERE job = $1")
	if got := enrollOne(t, s, job); !got.After(born) {
		t.Errorf("after a write by another cluster: generation began at %v, want after %v", got, born)
	}
}

// pgTool returns the path of a PostgreSQL client program from the
// installation the test servers run, skipping the test without one.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() {
			return filepath.Join(d, name)
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found", name)
	}
	t.Skipf("%s not found: install the PostgreSQL client programs to run this test", name)
	return ""
}

// command runs a program and fails the test if it fails.
func command(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(name), err, out)
	}
}

// TestEnrollConcurrently: replicas starting together enroll the same new
// jobs at once, each in its own order, while others claim them; every
// enrollment succeeds, and all agree on when each job's generation began.
func TestEnrollConcurrently(t *testing.T) {
	t.Parallel()
	s := newStore(t, func(o *pgstore.Options) { o.PoolSize = 8 })
	jobs := []string{"a", "b", "c", "d", "e", "f"}
	const replicas = 8
	borns := make([]map[string]time.Time, replicas)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for r := range replicas {
		wg.Go(func() {
			order := slices.Clone(jobs)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			<-start
			if r%4 == 3 {
				reqs := make([]slotstore.ClaimRequest, len(order))
				for i, job := range order {
					reqs[i] = slotstore.ClaimRequest{Job: job, Slot: slot(r), Lease: time.Minute}
				}
				if _, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: fmt.Sprint(r), Requests: reqs}); err != nil {
					t.Errorf("replica %d: claim: %v", r, err)
				}
			}
			gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: order})
			if err != nil {
				t.Errorf("replica %d: enroll: %v", r, err)
				return
			}
			borns[r] = map[string]time.Time{}
			for i, g := range gens {
				if g.Job != order[i] {
					t.Errorf("replica %d: generation %d is %+v, want job %s", r, i, g, order[i])
				}
				borns[r][g.Job] = g.Born
			}
		})
	}
	close(start)
	wg.Wait()
	for r := 1; r < replicas; r++ {
		for _, job := range jobs {
			if borns[r] != nil && borns[0] != nil && !borns[r][job].Equal(borns[0][job]) {
				t.Errorf("generation of %s: replica %d says %v, replica 0 %v", job, r, borns[r][job], borns[0][job])
			}
		}
	}
}
