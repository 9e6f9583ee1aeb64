package sqlitestore

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryOfJobInStateUsesTheJobsKey: one job's markers in one state are
// read along the job's key, not by a walk of every job's markers in that
// state (markers_by_state), which at a million markers took seconds and held
// up lease renewals behind it.
func TestHistoryOfJobInStateUsesTheJobsKey(t *testing.T) {
	s, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "slots.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, state := range []string{"done", "running"} {
		rows, err := s.conn().QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+historyOfJobInState, "j", state, 10, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if strings.Contains(text, "markers_by_state") || !strings.Contains(text, "job=?") {
			t.Errorf("state %s: plan %q, want a search by job", state, text)
		}
	}
}
