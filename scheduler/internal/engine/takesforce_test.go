package engine

import (
	"context"
	"testing"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// enrolment is one replica's enrolment of spec fp at revision rev.
type enrolment struct {
	replica, fp string
	rev         int64
}

// TakesForce predicts, from the catalog entry a store answers, what the
// store then does with the enrolment: memstore, which runs the rule every
// store shares, agrees in every case.
func TestTakesForceAgreesWithTheStore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []enrolment
		offer  enrolment
		want   bool
	}{
		{"new job", nil, enrolment{"a", "A", 0}, true},
		{"the spec in force", []enrolment{{"a", "A", 3}}, enrolment{"b", "A", 1}, true},
		{"a new spec without revisions", []enrolment{{"a", "A", 0}}, enrolment{"b", "B", 0}, true},
		{"a higher revision", []enrolment{{"a", "A", 1}}, enrolment{"b", "B", 2}, true},
		{"a lower revision", []enrolment{{"a", "A", 2}}, enrolment{"b", "B", 1}, false},
		{"an equal revision", []enrolment{{"a", "A", 2}}, enrolment{"b", "B", 2}, false},
		{"a revision against none", []enrolment{{"a", "A", 0}}, enrolment{"b", "B", 5}, true},
		{"a spec replaced before", []enrolment{{"a", "A", 0}, {"b", "B", 0}}, enrolment{"c", "A", 0}, false},
		{"the last carrier brings another spec", []enrolment{{"a", "A", 2}}, enrolment{"a", "B", 1}, true},
		{"one carrier of two brings another spec", []enrolment{{"a", "A", 2}, {"b", "A", 2}}, enrolment{"a", "B", 1}, false},
		{"a replaced spec, its carriers gone", []enrolment{{"a", "A", 0}, {"b", "B", 0}, {"b", "C", 0}}, enrolment{"b", "A", 0}, true},
		{"a replaced spec by a carrier of two", []enrolment{{"a", "A", 0}, {"b", "B", 0}, {"c", "B", 0}}, enrolment{"b", "A", 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New(memstore.Options{})
			for _, e := range tc.before {
				enrollSpec(t, st, e)
			}
			var en slotstore.CatalogEntry
			es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{"j"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(es) == 1 {
				en = es[0]
			}
			s := slotstore.Spec{Fingerprint: tc.offer.fp, Revision: tc.offer.rev}
			got := TakesForce(s, en, tc.offer.replica)
			took := enrollSpec(t, st, tc.offer).Fingerprint == tc.offer.fp
			if got != took || got != tc.want {
				t.Errorf("TakesForce = %v, the store put it in force: %v, want %v", got, took, tc.want)
			}
		})
	}
}

// enrollSpec enrolls e's spec of job j on st and returns the spec in force after.
func enrollSpec(t *testing.T, st slotstore.Store, e enrolment) slotstore.SpecRecord {
	t.Helper()
	gens, err := st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{"j"}, Replica: e.replica,
		Specs: []slotstore.Spec{{Fingerprint: e.fp, Revision: e.rev}}})
	if err != nil || len(gens) != 1 {
		t.Fatalf("enroll %+v: %v, %v", e, gens, err)
	}
	return gens[0].Spec
}
