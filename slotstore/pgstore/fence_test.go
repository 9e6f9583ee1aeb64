package pgstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestFenceFloor: fences keep growing even when the fences row falls back,
// as after a failover to a replica that had not received the latest
// commits: the database clock is their floor.
func TestFenceFloor(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	first := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute})
	if floor := time.Now().Add(-time.Minute).UnixMicro(); first.Claim.Fence < floor {
		t.Errorf("fence %d is below the clock floor %d", first.Claim.Fence, floor)
	}
	for _, sql := range []string{"UPDATE %s SET fence = 0", "DELETE FROM %s"} {
		if _, err := pool.Exec(t.Context(), fmt.Sprintf(sql, pgx.Identifier{s.Schema(), "fences"}.Sanitize())); err != nil {
			t.Fatal(err)
		}
		next := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(1), Lease: time.Minute})
		if next.Status == slotstore.Held {
			next = claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(2), Lease: time.Minute})
		}
		if next.Status != slotstore.Won || next.Claim.Fence <= first.Claim.Fence {
			t.Errorf("after %q: %v fence %d, want won with a fence above %d", sql, next.Status, next.Claim.Fence, first.Claim.Fence)
		}
		first = next
	}
}
