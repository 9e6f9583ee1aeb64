package pgstore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestCatalogTakesTurnsWithClaims: replicas enroll specs of rising
// revisions for the same jobs, in shuffled order, while others claim the
// jobs' slots, also in shuffled order, naming the specs they last read in
// force. No call fails (none is aborted as a deadlock), and every claim
// won was decided, by the database's clock, while the spec it named was in
// force: an enrolment that puts another spec in force and the claims of
// its job take turns.
func TestCatalogTakesTurnsWithClaims(t *testing.T) {
	t.Parallel()
	s := newStore(t, func(o *pgstore.Options) { o.PoolSize = 8 })
	const enrollers, claimers, rounds = 3, 3, 8
	jobs := []string{"a", "b", "c"}
	var (
		rev  atomic.Int64
		next atomic.Int64 // the next slot to claim
		mu   sync.Mutex
		won  []slotstore.ClaimResult
		spec = map[string]string{} // job@fence → the spec its claim named
		wg   sync.WaitGroup
	)
	first := slotstore.EnrollParams{Replica: "e", Jobs: jobs}
	for range jobs {
		first.Specs = append(first.Specs, slotstore.Spec{Fingerprint: "v0"})
	}
	if _, err := s.Enroll(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	for e := range enrollers {
		rng := rand.New(rand.NewPCG(uint64(e), 11))
		wg.Go(func() {
			for range rounds {
				p := slotstore.EnrollParams{Replica: fmt.Sprint("e", e), Jobs: append([]string(nil), jobs...)}
				rng.Shuffle(len(p.Jobs), func(i, j int) { p.Jobs[i], p.Jobs[j] = p.Jobs[j], p.Jobs[i] })
				for range p.Jobs {
					n := rev.Add(1)
					p.Specs = append(p.Specs, slotstore.Spec{Fingerprint: fmt.Sprint("v", n), Revision: n})
				}
				if _, err := s.Enroll(t.Context(), p); err != nil {
					t.Errorf("enrolment by e%d: %v", e, err)
					return
				}
			}
		})
	}
	for c := range claimers {
		rng := rand.New(rand.NewPCG(uint64(c), 13))
		wg.Go(func() {
			for range rounds * 2 {
				entries, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
				if err != nil {
					t.Errorf("catalog read by c%d: %v", c, err)
					return
				}
				var reqs []slotstore.ClaimRequest
				for _, e := range entries {
					reqs = append(reqs, slotstore.ClaimRequest{Job: e.Job, Slot: slot(int(next.Add(1))), Lease: time.Minute, Spec: e.InForce.Fingerprint})
				}
				rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
				res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: fmt.Sprint("c", c), Requests: reqs})
				if err != nil {
					t.Errorf("claim by c%d: %v", c, err)
					return
				}
				mu.Lock()
				for i, r := range res {
					if r.Status == slotstore.Won {
						won = append(won, r)
						spec[fmt.Sprint(r.Marker.Job, "@", r.Marker.Fence)] = reqs[i].Spec
					} else if r.Status != slotstore.Superseded {
						t.Errorf("claim of a fresh slot of %s: %v", reqs[i].Job, r.Status)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	entries, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil {
		t.Fatal(err)
	}
	inForce := map[string]slotstore.SpecRecord{} // job@fingerprint → its record
	for _, e := range entries {
		for _, r := range append([]slotstore.SpecRecord{e.InForce}, e.Past...) {
			inForce[e.Job+"@"+r.Fingerprint] = r
		}
	}
	for _, r := range won {
		fp := spec[fmt.Sprint(r.Marker.Job, "@", r.Marker.Fence)]
		f, ok := inForce[r.Marker.Job+"@"+fp]
		at := r.Marker.ClaimedAt
		if !ok || at.Before(f.Since) || (!f.Until.IsZero() && !at.Before(f.Until)) {
			t.Errorf("%s won at %s under spec %s, in force from %s until %s", r.Marker.Job, at.Format(time.RFC3339Nano), fp,
				f.Since.Format(time.RFC3339Nano), f.Until.Format(time.RFC3339Nano))
		}
	}
	if len(won) == 0 {
		t.Error("no claim won")
	}
}

// TestCatalogAnswersAsMemstore: what the conformance suite leaves to the
// one-by-one path answers as memstore does: a batch enrolling one job
// three times is applied in request order, each request answered with the
// spec in force after its own offer (each takes force: the replica
// carries no spec in force but the one it offered before); a batch that names a slot twice
// (decided one by one) refuses the request naming the replaced spec and
// decides the other; a skip likewise.
func TestCatalogAnswersAsMemstore(t *testing.T) {
	t.Parallel()
	for _, s := range []slotstore.Store{newStore(t), memstore.New(memstore.Options{})} {
		name := fmt.Sprintf("%T", s)
		sp := func(fp string) slotstore.Spec { return slotstore.Spec{Fingerprint: fp, Body: []byte(fp)} }
		gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Replica: "r1", Jobs: []string{"d", "d", "d"},
			Specs: []slotstore.Spec{sp("x"), sp("y"), sp("x")}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := gens[0].Spec.Fingerprint + gens[1].Spec.Fingerprint + gens[2].Spec.Fingerprint; got != "xyx" {
			t.Errorf("%s: enrolling x, y, x answered %q in force, want x, y, x (the replica carried none but its own)", name, got)
		}
		req := func(i int, fp string) slotstore.ClaimRequest {
			return slotstore.ClaimRequest{Job: "d", Slot: slot(i), Lease: time.Minute, Spec: fp}
		}
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
			req(0, "y"), req(0, "x"), req(1, "y"), req(1, "")}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []slotstore.Status{slotstore.Superseded, slotstore.Won, slotstore.Superseded, slotstore.Won}
		for i, r := range res {
			if r.Status != want[i] {
				t.Errorf("%s: request %d: %v, want %v", name, i, r.Status, want[i])
			}
		}
		if r := res[2]; r.Marker.Job != "d" || !r.Marker.Slot.Equal(slot(1)) || r.Marker.Fence != 0 {
			t.Errorf("%s: superseded answer %+v", name, r)
		}
		if res[1].Claim.Fence >= res[3].Claim.Fence {
			t.Errorf("%s: fences %d then %d: not in request order", name, res[1].Claim.Fence, res[3].Claim.Fence)
		}
		sk, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r1", Requests: []slotstore.SkipRequest{
			{Job: "d", Slot: slot(2), Reason: "missed", Spec: "y"}, {Job: "d", Slot: slot(2), Reason: "missed", Spec: "x"}}})
		if err != nil || sk[0].Status != slotstore.Superseded || sk[1].Status != slotstore.Skipped {
			t.Errorf("%s: skips under y then x: %+v, %v", name, sk, err)
		}
	}
}

// TestCatalogFirstEnrolmentsAtOnce: replicas enrolling new specs of a job
// that has none, all at once, leave a history whose times follow each
// other: each spec in force until the next took force, at or after it
// took force itself, by the database's clock.
func TestCatalogFirstEnrolmentsAtOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t, func(o *pgstore.Options) { o.PoolSize = 8 })
	const replicas, jobs = 6, 10
	var wg sync.WaitGroup
	for r := range replicas {
		wg.Go(func() {
			for j := range jobs {
				p := slotstore.EnrollParams{Replica: fmt.Sprint("r", r), Jobs: []string{fmt.Sprint("fresh", j)},
					Specs: []slotstore.Spec{{Fingerprint: fmt.Sprint("r", r)}}}
				if _, err := s.Enroll(t.Context(), p); err != nil {
					t.Errorf("enrolment by r%d: %v", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	entries, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil || len(entries) != jobs {
		t.Fatalf("catalog: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		next := e.InForce
		for _, p := range e.Past {
			if !p.Until.Equal(next.Since) || p.Until.Before(p.Since) {
				t.Errorf("%s: %s in force from %s until %s, then %s from %s", e.Job, p.Fingerprint, p.Since.Format(time.RFC3339Nano),
					p.Until.Format(time.RFC3339Nano), next.Fingerprint, next.Since.Format(time.RFC3339Nano))
			}
			next = p
		}
	}
}
