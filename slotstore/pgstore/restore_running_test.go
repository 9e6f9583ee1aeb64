package pgstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestRestoredRunningMarkerIsNotTakenOver: a logical backup taken while a
// slot ran, restored after the slot finished. The restore is detected (the
// generation begins anew), and the restored running marker, claimed before
// it, is abandoned for data loss once its lease has ended, not taken over by
// the next takeover-only claim (the engine's scan): the finished slot does
// not run again.
func TestRestoredRunningMarkerIsNotTakenOver(t *testing.T) {
	pgDump, pgRestore := pgTool(t, "pg_dump"), pgTool(t, "pg_restore")
	dsn := testserver.SharedPostgres(t).DSN()
	s := newStore(t)
	const job = "restored-running"
	born := enrollOne(t, s, job)
	sl := firstSlot(born)
	time.Sleep(time.Until(sl) + 10*time.Millisecond)
	res := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: sl, Lease: time.Second})
	if res.Status != slotstore.Won {
		t.Fatalf("claim: %v", res.Status)
	}
	backup := filepath.Join(t.TempDir(), "backup.dump")
	command(t, pgDump, "--dbname="+dsn, "--format=custom", "--schema="+s.Schema(), "--file="+backup)
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: res.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	command(t, pgRestore, "--dbname="+dsn, "--clean", "--if-exists", "--single-transaction", backup)
	if again := enrollOne(t, s, job); !again.After(sl) {
		t.Fatalf("restore not detected: generation %v", again)
	}
	time.Sleep(1100 * time.Millisecond)
	res = claimOne(t, s, "scan", slotstore.ClaimRequest{Job: job, Slot: sl, Lease: time.Minute, TakeoverOnly: true})
	if res.Status == slotstore.Won {
		t.Errorf("slot %v, finished after the backup, won again after the detected restore: attempt %d fence %d", sl, res.Claim.Attempt, res.Claim.Fence)
	}
}
