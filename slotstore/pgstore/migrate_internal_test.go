package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/slotstore"
)

// TestMigrateFromVersion2: a schema a version 2 build has used migrates to
// the current version keeping its markers (with no incarnation), fences
// and the claim function's result type; the version 2 claim function is
// gone, so a replica of that build still running claims nothing; and the
// generation of a job begins at its first claim after the upgrade.
func TestMigrateFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := oldStore(t, "v2", 2)
	pool, schema := s.pool, s.schema

	// A replica of the version 2 build claims two slots and finishes one.
	oldClaim := `SELECT won, fence FROM ` + quote(schema) + `.claim('old', ARRAY['j'], ARRAY[$1::timestamptz],
		ARRAY[3600000000::bigint], ARRAY[false], ARRAY[0], ARRAY[$1::timestamptz + interval '7 days'], ARRAY[false],
		ARRAY['allow'], ARRAY[false], ARRAY[false], ARRAY[''])`
	claimV2 := func(slot time.Time) slotstore.Ref {
		t.Helper()
		var (
			won   bool
			fence int64
		)
		if err := pool.QueryRow(ctx, oldClaim, slot).Scan(&won, &fence); err != nil || !won {
			t.Fatalf("version 2 claim of %v: won %v, %v", slot, won, err)
		}
		return slotstore.Ref{Job: "j", Slot: slot, Fence: fence}
	}
	past := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	done := claimV2(past)
	if err := s.Finish(ctx, slotstore.FinishParams{Ref: done, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	running := claimV2(past.Add(time.Second))

	if err := s.migrate(ctx); err != nil {
		t.Fatalf("migrate from version 2: %v", err)
	}
	ms, err := s.History(ctx, slotstore.HistoryParams{Job: "j"})
	if err != nil || len(ms) != 2 {
		t.Fatalf("history after the migration: %v, %v", ms, err)
	}
	for _, m := range ms {
		if m.Incarnation != "" || (m.State != slotstore.StateDone && m.State != slotstore.StateRunning) {
			t.Errorf("marker after the migration: %+v", m)
		}
	}
	var pgErr *pgconn.PgError
	if _, err := pool.Exec(ctx, oldClaim, past.Add(2*time.Second)); !errors.As(err, &pgErr) || pgErr.Code != "42883" {
		t.Errorf("version 2 claim after the migration: %v, want undefined_function", err)
	}

	claim := func(r slotstore.ClaimRequest) slotstore.ClaimResult {
		t.Helper()
		res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "new", Incarnation: "i1", Requests: []slotstore.ClaimRequest{r}})
		if err != nil {
			t.Fatalf("claim %v: %v", r.Slot, err)
		}
		return res[0]
	}
	if res := claim(slotstore.ClaimRequest{Job: "j", Slot: done.Slot, Lease: time.Minute}); res.Status != slotstore.Finished {
		t.Errorf("claim of the slot done before the migration: %v", res.Status)
	}
	if res := claim(slotstore.ClaimRequest{Job: "j", Slot: running.Slot, Lease: time.Minute}); res.Status != slotstore.Held {
		t.Errorf("claim of the slot running since before the migration: %v", res.Status)
	}
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: running, Lease: time.Hour}); err != nil {
		t.Errorf("renewal of the claim made before the migration: %v", err)
	}
	// A job the schema knew before the migration keeps its history: a
	// past slot with no marker is still claimed (catch-up), while a job it
	// never saw begins its generation now.
	if res := claim(slotstore.ClaimRequest{Job: "j", Slot: past.Add(2 * time.Second), Lease: time.Minute}); res.Status != slotstore.Won {
		t.Errorf("claim of a past slot of a job known before the migration: %v %+v", res.Status, res.Marker)
	}
	if res := claim(slotstore.ClaimRequest{Job: "new", Slot: past.Add(2 * time.Second), Lease: time.Minute}); res.Status != slotstore.Skipped ||
		res.Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("claim of a past slot of a job new after the migration: %v %+v", res.Status, res.Marker)
	}
	next := claim(slotstore.ClaimRequest{Job: "j", Slot: time.Now().Add(time.Hour), Lease: time.Minute})
	if next.Status != slotstore.Won || next.Marker.Incarnation != "i1" || next.Claim.Fence <= running.Fence {
		t.Errorf("claim after the migration: %+v", next)
	}
}
