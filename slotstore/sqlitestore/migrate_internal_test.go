package sqlitestore

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestMigrateFromVersion1: a file written before generations keeps the
// history of the jobs it knew — a past slot of such a job with no marker
// is still claimed, as catch-up expects — while a job it never saw begins
// its generation at its first claim; markers keep their state.
func TestMigrateFromVersion1(t *testing.T) {
	past := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	path := oldFile(t, 1,
		"INSERT INTO fences (job, fence) VALUES ('j', 7)",
		`INSERT INTO markers (job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until, finished_at, outcome)
			VALUES ('j', `+itoa(past.Unix())+`, 'done', 'old', 7, 1, 1, 1, `+itoa(past.Add(24*time.Hour).UnixMilli())+`, 1, 'succeeded')`,
	)
	s, err := Open(t.Context(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	claim := func(job string, slot time.Time) slotstore.ClaimResult {
		t.Helper()
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{{Job: job, Slot: slot, Lease: time.Minute}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if res := claim("j", past); res.Status != slotstore.Finished || res.Marker.Incarnation != "" {
		t.Errorf("slot done before the migration: %v %+v", res.Status, res.Marker)
	}
	if res := claim("j", past.Add(time.Second)); res.Status != slotstore.Won || res.Claim.Fence <= 7 {
		t.Errorf("past slot of a job known before the migration: %v %+v", res.Status, res.Claim)
	}
	if res := claim("new", past); res.Status != slotstore.Skipped || res.Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("past slot of a job the file never saw: %v %+v", res.Status, res.Marker)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// oldFile writes a file at schema version v, as the build of that version
// created it, holding what rows inserts, and returns its path.
func oldFile(t *testing.T, v int, rows ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slots.db")
	db, err := sql.Open("sqlite", dsn(path, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	qs := append(slices.Clone(migrations[:v]), fmt.Sprintf("PRAGMA user_version = %d", v))
	for _, q := range append(qs, rows...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}
