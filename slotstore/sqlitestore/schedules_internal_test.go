package sqlitestore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestMigrateFromVersion5: a file of the build before schedules held as
// data keeps its catalog, every row a job of the configuration (no run,
// version or sequence number), which schedule writes refuse; the feed is
// empty, and schedules then work on the migrated file.
func TestMigrateFromVersion5(t *testing.T) {
	path := oldFile(t, 5,
		`INSERT INTO catalog (job, fingerprint, body, revision, replica, since, carriers, past)
			VALUES ('yaml', 'y', x'01', 3, 'r1', 1000, '{"r1":1000}', '[]')`,
		"INSERT INTO generations (job, born) VALUES ('yaml', 1)",
	)
	s, err := Open(t.Context(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.conn().QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version after opening: %d, %v; want %d", version, err, len(migrations))
	}
	es, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil || len(es) != 1 || es[0].Job != "yaml" || es[0].InForce.Fingerprint != "y" || es[0].InForce.Revision != 3 ||
		es[0].Run != "" || es[0].Version != 0 || es[0].Seq != 0 || es[0].Deleted || len(es[0].Carriers) != 1 {
		t.Fatalf("catalog of the migrated file: %+v, %v", es, err)
	}
	if c, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{}); err != nil || c.Head != 0 || len(c.Entries) != 0 {
		t.Fatalf("changes of the migrated file: %+v, %v", c, err)
	}
	put := func(id string) slotstore.ScheduleResult {
		t.Helper()
		res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api", Writes: []slotstore.ScheduleWrite{
			{ID: id, Run: "job", Spec: slotstore.Spec{Fingerprint: "p"}, IfVersion: slotstore.AnyVersion}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if res := put("yaml"); !errors.Is(res.Err, slotstore.ErrNotSchedule) || res.Entry.InForce.Fingerprint != "y" {
		t.Fatalf("a put of the configuration's job: %+v, %v", res.Entry, res.Err)
	}
	if res := put("new"); res.Err != nil || res.Entry.Version != 1 || res.Entry.Seq != 1 {
		t.Fatalf("the first schedule of the migrated file: %+v, %v", res.Entry, res.Err)
	}
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"yaml", "new"}, Replica: "r2",
		Specs: []slotstore.Spec{{Fingerprint: "y"}, {Fingerprint: "other"}}})
	if err != nil || gens[0].Spec.Fingerprint != "y" || !gens[0].Born.Equal(time.UnixMilli(1).UTC()) || gens[1].Spec.Fingerprint != "p" {
		t.Fatalf("enrolment on the migrated file: %+v, %v", gens, err)
	}
}

// TestScheduleQueryPlans: every page of Schedules is a range of an index,
// and the feed's poll reads catalog_by_seq, so no call reads the catalog
// through: with a million schedules a page still costs its own rows.
func TestScheduleQueryPlans(t *testing.T) {
	s, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "slots.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		p    slotstore.ScheduleParams
		want string // the index the plan must search
	}{
		{"all", slotstore.ScheduleParams{Limit: 100}, "catalog_schedules (job>?)"},
		{"prefix", slotstore.ScheduleParams{Prefix: "t/", Limit: 100}, "catalog_schedules (job>? AND job<?)"},
		{"prefix after", slotstore.ScheduleParams{Prefix: "t/", After: "t/5", Limit: 100}, "catalog_schedules (job>? AND job<?)"},
		{"run", slotstore.ScheduleParams{Run: "digest", Limit: 100}, "catalog_by_run (run=? AND job>?)"},
		{"run prefix", slotstore.ScheduleParams{Run: "digest", Prefix: "t/", Limit: 100}, "catalog_by_run (run=? AND job>? AND job<?)"},
		{"ids", slotstore.ScheduleParams{IDs: []string{"a", "b"}, Limit: 100}, "(job=?)"},
	} {
		q, args := schedulesQuery(c.p)
		plan := explain(t, s, q, args...)
		if !strings.Contains(plan, "SEARCH catalog USING INDEX "+c.want) && !strings.Contains(plan, "SEARCH catalog USING INDEX sqlite_autoindex_catalog_1 "+c.want) {
			t.Errorf("%s: plan %q, want a search of %s", c.name, plan, c.want)
		}
		if strings.Contains(plan, "SCAN catalog") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: plan %q reads the catalog through or sorts it", c.name, plan)
		}
	}
	if plan := explain(t, s, changesPage, 0, 10, 100); !strings.Contains(plan, "SEARCH catalog USING INDEX catalog_by_seq (seq>? AND seq<?)") ||
		strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("changes: plan %q", plan)
	}
	if plan := explain(t, s, selectHead); !strings.Contains(plan, "SEARCH schedule_seq USING INTEGER PRIMARY KEY") {
		t.Errorf("head: plan %q", plan)
	}
}

// explain returns the details of q's query plan, one per line.
func explain(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.conn().Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// TestPrefixEnd: the end of a prefix's range is the least string past
// every string with the prefix.
func TestPrefixEnd(t *testing.T) {
	for prefix, want := range map[string]string{"t/": "t0", "a": "b", "a\xff": "b", "a~": "a\x7f", "": "", "\xff\xff": ""} {
		got, ok := prefixEnd(prefix)
		if got != want || ok != (want != "") {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q", prefix, got, ok, want)
		}
	}
}
