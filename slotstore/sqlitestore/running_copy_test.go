package sqlitestore_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestCopyWithRunningSlotIsNotTakenOver: the older copy holds a slot as
// running (the copy was made while it ran); the slot then finished. After
// the replacement is noticed and every generation begins anew, the running
// marker, claimed before the new generation, is abandoned for data loss once
// its lease has ended, not taken over by the engine's scan (a TakeoverOnly
// claim): the finished slot does not run again.
func TestCopyWithRunningSlotIsNotTakenOver(t *testing.T) {
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "slots.db"), filepath.Join(dir, "backup.db")
	a := open(t, path)
	born := enroll(t, a, "j")
	slot := born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Second)
	waitUntil(t, slot)
	res := claim(t, a, "a", slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Second})
	if res.Status != slotstore.Won {
		t.Fatalf("claim: %v", res.Status)
	}
	backupTo(t, path, backup) // taken while the slot runs
	if err := a.Finish(t.Context(), slotstore.FinishParams{Ref: res.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	// a notices the replacement at its next write and begins new generations.
	if g := enroll(t, a, "j"); !g.After(slot) {
		t.Fatalf("generation after the replacement: %v", g)
	}
	time.Sleep(1100 * time.Millisecond) // the copied lease ends
	// The engine's scan: a takeover-only claim of a running marker.
	res = claim(t, a, "scan", slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute, TakeoverOnly: true})
	if res.Status == slotstore.Won {
		t.Errorf("slot %v, finished before the replacement was noticed, won again: attempt %d fence %d", slot, res.Claim.Attempt, res.Claim.Fence)
	}
}
