package sqlitestore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestMigrateFromVersion4: a file of the build before the catalog opens
// with an empty catalog and its markers as they were; claims naming no
// spec, as that build makes them, go on as before, and the catalog then
// works on the migrated file.
func TestMigrateFromVersion4(t *testing.T) {
	slot := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	leaseEnd := time.Now().Add(time.Hour).UnixMilli()
	path := oldFile(t, 4,
		"INSERT INTO generations (job, born) VALUES ('j', 1)",
		"INSERT INTO fences (job, fence) VALUES ('j', 7)",
		`INSERT INTO markers (job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until)
			VALUES ('j', `+itoa(slot.Unix())+`, 'running', 'old', 7, 1, 1, `+itoa(leaseEnd)+`, `+itoa(leaseEnd)+`)`,
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
	if es, err := s.Catalog(t.Context(), slotstore.CatalogParams{}); err != nil || len(es) != 0 {
		t.Fatalf("catalog of the migrated file: %+v, %v; want none", es, err)
	}
	claim := func(r slotstore.ClaimRequest) slotstore.ClaimResult {
		t.Helper()
		r.Job, r.Lease = "j", time.Minute
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "new", Requests: []slotstore.ClaimRequest{r}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if res := claim(slotstore.ClaimRequest{Slot: slot}); res.Status != slotstore.Held || res.Marker.Fence != 7 {
		t.Errorf("slot running before the migration: %v %+v", res.Status, res.Marker)
	}
	if res := claim(slotstore.ClaimRequest{Slot: slot.Add(time.Second)}); res.Status != slotstore.Won || res.Claim.Fence <= 7 {
		t.Errorf("claim naming no spec after the migration: %v %+v", res.Status, res.Claim)
	}
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"j"}, Replica: "new",
		Specs: []slotstore.Spec{{Fingerprint: "fp"}}})
	if err != nil || gens[0].Spec.Fingerprint != "fp" || !gens[0].Born.Equal(time.UnixMilli(1).UTC()) {
		t.Fatalf("enrolment with a spec on the migrated file: %+v, %v", gens, err)
	}
	if res := claim(slotstore.ClaimRequest{Slot: slot.Add(2 * time.Second), Spec: "other"}); res.Status != slotstore.Superseded {
		t.Errorf("claim under another spec: %v", res.Status)
	}
}

// TestSupersededCostsNothing: in one batch, claims refused for their spec
// issue no fence and begin no generation, and the requests naming a spec
// read each job's spec in force once per batch, while requests naming
// none read no spec at all.
func TestSupersededCostsNothing(t *testing.T) {
	s, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "slots.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"j"}, Replica: "r",
		Specs: []slotstore.Spec{{Fingerprint: "new"}}}); err != nil {
		t.Fatal(err)
	}
	// The catalog row of a job the file has no generation of stands for
	// a job enrolled in a file whose generations were reset by hand.
	if _, err := s.conn().Exec(`INSERT INTO catalog (job, fingerprint, body, revision, replica, since, carriers, past)
		SELECT 'fresh', fingerprint, body, revision, replica, since, carriers, past
		FROM catalog WHERE job = 'j'`); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := s.conn().QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fences, gens := count("SELECT count(*) FROM fences"), count("SELECT count(*) FROM generations")
	slot := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	p := slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{
		{Job: "j", Slot: slot, Lease: time.Minute, Spec: "old"},
		{Job: "fresh", Slot: slot, Lease: time.Minute, Spec: "old"},
		{Job: "j", Slot: slot.Add(time.Second), Lease: time.Minute, Spec: "old"},
	}}
	var specReads map[string]string
	if _, err := s.batch(t.Context(), "claim", len(p.Requests), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		out, err := st.claimAll(t.Context(), p, p.Requests, now)
		for i, res := range out {
			if res.Status != slotstore.Superseded {
				t.Errorf("request %d under a replaced spec: %v", i, res.Status)
			}
		}
		specReads = st.specs
		return out, err
	}); err != nil {
		t.Fatal(err)
	}
	if len(specReads) != 2 || specReads["j"] != "new" || specReads["fresh"] != "new" {
		t.Errorf("specs read by the batch: %v, want j and fresh once each", specReads)
	}
	if got := count("SELECT count(*) FROM fences"); got != fences {
		t.Errorf("refused claims issued fences: %d jobs with fences, was %d", got, fences)
	}
	if got := count("SELECT count(*) FROM generations"); got != gens {
		t.Errorf("refused claims began generations: %d, was %d", got, gens)
	}
	if _, err := s.batch(t.Context(), "claim", 1, func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		plain := []slotstore.ClaimRequest{{Job: "j", Slot: slot, Lease: time.Minute}}
		out, err := st.claimAll(t.Context(), slotstore.ClaimParams{Replica: "r"}, plain, now)
		if st.spec != nil || st.specs != nil {
			t.Error("a claim naming no spec read the catalog")
		}
		return out, err
	}); err != nil {
		t.Fatal(err)
	}
}
