package sqlitestore_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestCatalogReopen: the catalog outlives the Store that wrote it, byte
// for byte, and a Store opened later refuses claims under a spec that lost
// while the file was closed.
func TestCatalogReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	s := open(t, path)
	offer := func(s slotstore.Store, replica string, sp slotstore.Spec) {
		t.Helper()
		if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"j"}, Replica: replica, Specs: []slotstore.Spec{sp}}); err != nil {
			t.Fatal(err)
		}
	}
	offer(s, "r1", slotstore.Spec{Fingerprint: "v1", Body: []byte("one"), Revision: 1})
	offer(s, "r2", slotstore.Spec{Fingerprint: "v2", Body: []byte{0, 0xff}, Revision: 2})
	before, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil || len(before) != 1 {
		t.Fatalf("catalog: %+v, %v", before, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	after, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil || len(after) != 1 {
		t.Fatalf("catalog after reopening: %+v, %v", after, err)
	}
	b, a := before[0], after[0]
	if a.InForce.Fingerprint != "v2" || !bytes.Equal(a.InForce.Body, []byte{0, 0xff}) || a.InForce.Revision != 2 ||
		a.InForce.Replica != "r2" || !a.InForce.Since.Equal(b.InForce.Since) || len(a.Past) != 1 ||
		a.Past[0].Fingerprint != "v1" || string(a.Past[0].Body) != "one" || !a.Past[0].Until.Equal(b.Past[0].Until) ||
		len(a.Carriers) != 1 || !a.Carriers["r2"].Equal(b.Carriers["r2"]) {
		t.Errorf("entry after reopening: %+v, before %+v", a, b)
	}
	r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute, Spec: "v1"}
	if res := claim(t, s, "r1", r); res.Status != slotstore.Superseded {
		t.Errorf("claim under the spec that lost, after reopening: %v", res.Status)
	}
}
