package sqlitestore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// BenchmarkClaimBatch1000 claims 1,000 fresh slots per operation, in one
// call, on a file and, as the baseline of the same run, on memstore; the
// spec cases name the job's spec in force in every claim.
func BenchmarkClaimBatch1000(b *testing.B) {
	openFile := func(b *testing.B) slotstore.Store {
		s, err := Open(b.Context(), Options{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	openMem := func(*testing.B) slotstore.Store { return memstore.New(memstore.Options{}) }
	for _, tc := range []struct {
		name string
		open func(b *testing.B) slotstore.Store
		spec string
	}{
		{"sqlite", openFile, ""},
		{"sqlite-spec", openFile, "fp"},
		{"memstore", openMem, ""},
		{"memstore-spec", openMem, "fp"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st := tc.open(b)
			defer st.Close()
			if tc.spec != "" {
				_, err := st.Enroll(b.Context(), slotstore.EnrollParams{Jobs: []string{"bench"}, Replica: "r",
					Specs: []slotstore.Spec{{Fingerprint: tc.spec}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
			reqs := make([]slotstore.ClaimRequest, 1000)
			n := 0
			for b.Loop() {
				for i := range reqs {
					reqs[i] = slotstore.ClaimRequest{Job: "bench", Slot: base.Add(time.Duration(n) * time.Second), Lease: time.Minute, Spec: tc.spec}
					n++
				}
				res, err := st.Claim(b.Context(), slotstore.ClaimParams{Replica: "r", Requests: reqs})
				if err != nil || res[0].Status != slotstore.Won {
					b.Fatalf("claim: %v", err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}
