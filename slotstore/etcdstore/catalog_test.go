package etcdstore_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// enrollSpec enrolls job with a spec named fp for replica.
func enrollSpec(t *testing.T, s slotstore.Store, replica, job, fp string) {
	t.Helper()
	_, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{job}, Replica: replica,
		Specs: []slotstore.Spec{{Fingerprint: fp, Body: []byte(fp)}}})
	if err != nil {
		t.Fatalf("enroll %s with spec %s by %s: %v", job, fp, replica, err)
	}
}

// TestCatalogRoundTrips: the catalog costs a claim naming a spec no round
// trip more than one naming none; the store's cached spec in force is
// checked by the claim's compares, so a spec put in force by another
// store is seen in the same round trip, and the claim under the old one
// refused; a skip naming the old spec is refused too. An enrolment with
// specs is a read and a transaction; without, of jobs it began, a read.
func TestCatalogRoundTrips(t *testing.T) {
	prefix := freshPrefix()
	s, rc := countedStore(t, prefix)
	other, _ := countedStore(t, prefix)
	if got := rc.count(func() { enrollSpec(t, s, "r1", "a", "v1") }); got != "Txn:2" {
		t.Errorf("enrolment with a spec: %s, want Txn:2 (a read, then the transaction)", got)
	}
	if got := rc.count(func() {
		if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
	}); got != "Txn:1" {
		t.Errorf("enrolment without specs of an enrolled job: %s, want Txn:1 (a read)", got)
	}
	base := nextHour()
	r := slotstore.ClaimRequest{Job: "a", Slot: base, Lease: time.Minute, Spec: "v1"}
	var res []slotstore.ClaimResult
	if got := rc.count(func() { res = claim(t, s, "r1", r) }); got != "Txn:1" {
		t.Errorf("claim naming the spec in force: %s, want Txn:1", got)
	}
	won(t, res)

	enrollSpec(t, other, "r2", "a", "v2")
	r.Slot = base.Add(time.Second)
	if got := rc.count(func() { res = claim(t, s, "r1", r) }); got != "Txn:1" {
		t.Errorf("claim naming a spec replaced since the store cached it: %s, want Txn:1", got)
	}
	if res[0].Status != slotstore.Superseded {
		t.Fatalf("claim naming the replaced spec: %v, want superseded", res[0].Status)
	}
	r.Slot = base.Add(2 * time.Second)
	if got := rc.count(func() { res = claim(t, s, "r1", r) }); got != "Txn:1" || res[0].Status != slotstore.Superseded {
		t.Errorf("claim naming the replaced spec again: %s, %v; want Txn:1, superseded", got, res[0].Status)
	}
	skip, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r1", Requests: []slotstore.SkipRequest{
		{Job: "a", Slot: base.Add(3 * time.Second), Reason: "missed", Spec: "v1"}}})
	if err != nil || skip[0].Status != slotstore.Superseded {
		t.Fatalf("skip naming the replaced spec: %+v, %v; want superseded", skip, err)
	}
	hist, err := s.History(t.Context(), slotstore.HistoryParams{Job: "a"})
	if err != nil || len(hist) != 1 || !hist[0].Slot.Equal(base) {
		t.Fatalf("history after the refused requests: %+v, %v; want the first slot alone", hist, err)
	}
	r.Spec = "v2"
	if got := rc.count(func() { res = claim(t, s, "r1", r) }); got != "Txn:1" {
		t.Errorf("claim naming the new spec in force: %s, want Txn:1", got)
	}
	won(t, res)
}
