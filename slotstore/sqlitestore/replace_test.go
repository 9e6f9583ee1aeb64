package sqlitestore_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// removeDB deletes the database file at path with its log and index.
func removeDB(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestFileDeleted: a store whose file was deleted under it moves to the
// file a new process creates at the path, so the two never both win a
// slot, and the slots the lost file knew are never claimed as new.
func TestFileDeleted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	a := open(t, path)
	born := enroll(t, a, "j")
	done := born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Second)
	ref := claim(t, a, "a", slotstore.ClaimRequest{Job: "j", Slot: done, Lease: time.Minute}).Claim.Ref
	if err := a.Finish(t.Context(), slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}

	removeDB(t, path)
	b := open(t, path)
	waitUntil(t, done)
	if res := claim(t, b, "b", slotstore.ClaimRequest{Job: "j", Slot: done, Lease: time.Minute}); res.Status != slotstore.Skipped ||
		res.Marker.Reason != slotstore.ReasonDataLoss {
		t.Fatalf("claim of a slot done in the deleted file: %v %+v; want skipped for data loss", res.Status, res.Marker)
	}
	next := time.Now().Add(time.Hour).Truncate(time.Second)
	winners := 0
	for _, s := range []slotstore.Store{a, b, a} {
		if claim(t, s, "r", slotstore.ClaimRequest{Job: "j", Slot: next, Lease: time.Minute}).Status == slotstore.Won {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d claims of one slot won after the file was deleted, want 1", winners)
	}
}

// TestFileReplacedByOlderCopy: a store that finds an older copy of its
// file at the path begins every job's generation anew in it, so no process
// that opens the copy later runs a slot finished after the copy was made.
func TestFileReplacedByOlderCopy(t *testing.T) {
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "slots.db"), filepath.Join(dir, "backup.db")
	a := open(t, path)
	born := enroll(t, a, "j")
	first, second := born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Second), born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(2*time.Second)
	run := func(slot time.Time) {
		ref := claim(t, a, "a", slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute}).Claim.Ref
		if err := a.Finish(t.Context(), slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}); err != nil {
			t.Fatal(err)
		}
	}
	run(first)
	backupTo(t, path, backup)
	run(second)

	// Restored as an operator would: the copy in place of the file, and
	// no log of the old file beside it.
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, second)
	// Any write notices the new file.
	if _, err := a.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
		t.Fatal(err)
	}
	c := open(t, path)
	for _, s := range []slotstore.Store{c, a} {
		res := claim(t, s, "c", slotstore.ClaimRequest{Job: "j", Slot: second, Lease: time.Minute})
		if res.Status != slotstore.Skipped || res.Marker.Reason != slotstore.ReasonDataLoss {
			t.Fatalf("claim of a slot finished after the copy: %v %+v; want skipped for data loss", res.Status, res.Marker)
		}
		if res := claim(t, s, "c", slotstore.ClaimRequest{Job: "j", Slot: first, Lease: time.Minute}); res.Status != slotstore.Finished {
			t.Fatalf("claim of a slot finished before the copy: %v, want finished", res.Status)
		}
	}
}

func enroll(t *testing.T, s slotstore.Store, job string) time.Time {
	t.Helper()
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{job}})
	if err != nil {
		t.Fatal(err)
	}
	return gens[0].Born
}

// waitUntil sleeps until the clock passes at.
func waitUntil(t *testing.T, at time.Time) {
	time.Sleep(time.Until(at) + 10*time.Millisecond)
}

// backupTo copies the database at path into a new file at to, as an
// operator's online backup would.
func backupTo(t *testing.T, path, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "VACUUM INTO ?", to); err != nil {
		t.Fatal(err)
	}
}
