package pgstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
)

// TestSchedulesWalkIndexes: a page of schedules, by job, by prefix or
// both, and a page of changes walk the indexes of the live schedules and
// of seq, with the plan a statement gets on its first calls and the
// generic one it may get after (plan_cache_mode): never a scan of the
// whole catalog.
func TestSchedulesWalkIndexes(t *testing.T) {
	t.Parallel()
	s := internalStore(t, "schedidx")
	ctx := t.Context()
	for b := range 4 {
		var ws []slotstore.ScheduleWrite
		for k := range slotstore.MaxScheduleWrites {
			ws = append(ws, slotstore.ScheduleWrite{ID: fmt.Sprintf("%c/%04d", 'a'+b, k), Run: fmt.Sprintf("job-%d", k%20),
				Spec: slotstore.Spec{Fingerprint: "p"}, IfVersion: slotstore.AnyVersion})
		}
		if _, err := s.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "t", Writes: ws}); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pc.Hijack() // its prepared statements are the test's
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ANALYZE "+quote(s.schema)+".catalog"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, sql, index string
		args             []string
	}{
		{"all", s.q.schedulesAll, "catalog_schedules ", []string{"'c/0100'", "'c/'", "'c0'", "10"}},
		{"by run", s.q.schedulesByRun, "catalog_schedules_by_run", []string{"''", "''", "'\x7f'", "10", "'job-3'"}},
		{"by run and prefix", s.q.schedulesByRun, "catalog_schedules_by_run", []string{"''", "'b/'", "'b0'", "10", "'job-3'"}},
		{"changes", s.q.changes, "catalog_by_seq", []string{"3990", "10"}},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, conn, mode, c.sql, c.args)
			if !strings.Contains(plan, c.index) || strings.Contains(plan, "Seq Scan on catalog") {
				t.Errorf("%s (%s): the plan does not walk %s:\n%s", c.name, mode, c.index, plan)
			}
		}
	}
}

// explain returns the plan of query with args (SQL literals) under
// plan_cache_mode mode, as a prepared statement gets it.
func explain(t *testing.T, conn *pgx.Conn, mode, query string, args []string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode+"; DEALLOCATE ALL; PREPARE q AS "+query); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE q("+strings.Join(args, ", ")+")", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
