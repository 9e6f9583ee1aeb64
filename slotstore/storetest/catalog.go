package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// spec returns a spec named fp with a body that says so.
func spec(fp string, rev int64) slotstore.Spec {
	return slotstore.Spec{Fingerprint: fp, Body: []byte(`{"spec":"` + fp + `"}`), Revision: rev}
}

// offer enrolls job with one spec for replica and returns the spec in
// force it answers.
func offer(t *testing.T, s slotstore.Store, replica, job string, sp slotstore.Spec) slotstore.SpecRecord {
	t.Helper()
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{job}, Replica: replica, Specs: []slotstore.Spec{sp}})
	if err != nil {
		t.Fatalf("enroll %s with spec %s by %s: %v", job, sp.Fingerprint, replica, err)
	}
	if len(gens) != 1 || gens[0].Job != job || gens[0].Born.IsZero() {
		t.Fatalf("enroll %s with spec %s: %+v", job, sp.Fingerprint, gens)
	}
	return gens[0].Spec
}

// entry returns job's catalog entry, failing the test if it has none.
func entry(t *testing.T, s slotstore.Store, job string) slotstore.CatalogEntry {
	t.Helper()
	es, err := s.Catalog(t.Context(), slotstore.CatalogParams{Jobs: []string{job}})
	if err != nil {
		t.Fatalf("catalog of %s: %v", job, err)
	}
	if len(es) != 1 || es[0].Job != job {
		t.Fatalf("catalog of %s: %+v, want one entry", job, es)
	}
	return es[0]
}

// inForce fails the test unless job's spec in force is fp, as Catalog and
// the answer got (a Generation.Spec) both say.
func inForce(t *testing.T, s slotstore.Store, what, job string, got slotstore.SpecRecord, fp string) slotstore.CatalogEntry {
	t.Helper()
	if got.Fingerprint != fp {
		t.Fatalf("%s: enrolment answered spec %q in force, want %q", what, got.Fingerprint, fp)
	}
	e := entry(t, s, job)
	if e.InForce.Fingerprint != fp {
		t.Fatalf("%s: catalog has spec %q in force, want %q", what, e.InForce.Fingerprint, fp)
	}
	return e
}

// testCatalogEnroll: the first spec enrolled takes force with its source;
// enrolling it again adds carriers and changes nothing else; the body is
// kept byte for byte.
func testCatalogEnroll(t *testing.T, s slotstore.Store) {
	before := time.Now()
	a := spec("fp-a", 0)
	a.Body = []byte{0, 1, 2, 0xff, '"', '\\'}
	got := offer(t, s, "r1", "cat", a)
	e := inForce(t, s, "first enrolment", "cat", got, "fp-a")
	f := e.InForce
	if f.Replica != "r1" || !bytes.Equal(f.Body, a.Body) || f.Revision != 0 || !f.Until.IsZero() ||
		f.Since.Before(before.Add(-time.Second)) || f.Since.After(time.Now().Add(time.Second)) {
		t.Errorf("spec in force after the first enrolment: %+v", f)
	}
	if !bytes.Equal(got.Body, a.Body) || !got.Since.Equal(f.Since) || got.Replica != "r1" {
		t.Errorf("enrolment answered %+v, catalog holds %+v", got, f)
	}
	if len(e.Past) != 0 || len(e.Carriers) != 1 || e.Carriers["r1"].IsZero() {
		t.Errorf("entry after the first enrolment: past %+v carriers %v", e.Past, e.Carriers)
	}
	time.Sleep(5 * time.Millisecond)
	inForce(t, s, "the same spec by r2", "cat", offer(t, s, "r2", "cat", spec("fp-a", 0)), "fp-a")
	e = entry(t, s, "cat")
	if !e.InForce.Since.Equal(f.Since) || e.InForce.Replica != "r1" || len(e.Carriers) != 2 || e.Carriers["r2"].Before(e.Carriers["r1"]) {
		t.Errorf("entry after r2 enrolled the same spec: %+v", e)
	}
	// An enrolment without specs neither needs a replica nor touches the
	// catalog, and answers the spec in force.
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"cat", "plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if gens[0].Spec.Fingerprint != "fp-a" || gens[1].Spec.Fingerprint != "" {
		t.Errorf("enrolment without specs answered %+v", gens)
	}
	es, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil || len(es) != 1 || es[0].Job != "cat" {
		t.Errorf("catalog of every job: %+v, %v; want cat alone (plain has no spec)", es, err)
	}
}

// testCatalogRule: a new spec takes force, a replaced one does not come
// back by a restart but does by Supersedes, and with revisions on both
// sides the higher one is in force whatever the order.
func testCatalogRule(t *testing.T, s slotstore.Store) {
	offer(t, s, "old-1", "roll", spec("v1", 0))
	inForce(t, s, "a new spec", "roll", offer(t, s, "new-1", "roll", spec("v2", 0)), "v2")
	e := inForce(t, s, "the old spec again (a crash-looping old replica)", "roll", offer(t, s, "old-2", "roll", spec("v1", 0)), "v2")
	if len(e.Past) != 1 || e.Past[0].Fingerprint != "v1" || e.Past[0].Until.IsZero() || e.Past[0].Until.Before(e.Past[0].Since) ||
		!e.Past[0].Until.Equal(e.InForce.Since) || e.Past[0].Replica != "old-1" {
		t.Errorf("past after v2 replaced v1: %+v (v2 since %s)", e.Past, stamp(e.InForce.Since))
	}
	if len(e.Carriers) != 1 || e.Carriers["new-1"].IsZero() {
		t.Errorf("carriers after v2 took force: %v, want new-1 alone", e.Carriers)
	}
	back := spec("v1", 0)
	back.Supersedes = "v-other"
	inForce(t, s, "supersedes naming another spec", "roll", offer(t, s, "old-2", "roll", back), "v2")
	back.Supersedes = "v2"
	e = inForce(t, s, "supersedes naming the spec in force (a rollback)", "roll", offer(t, s, "old-2", "roll", back), "v1")
	if len(e.Past) != 2 || e.Past[0].Fingerprint != "v2" || e.Past[1].Fingerprint != "v1" || e.InForce.Replica != "old-2" {
		t.Errorf("entry after the rollback: %+v", e)
	}

	offer(t, s, "a", "rev", spec("r5", 5))
	inForce(t, s, "a lower revision", "rev", offer(t, s, "b", "rev", spec("r4", 4)), "r5")
	inForce(t, s, "the same revision, another spec", "rev", offer(t, s, "b", "rev", spec("r5b", 5)), "r5")
	inForce(t, s, "a higher revision", "rev", offer(t, s, "c", "rev", spec("r7", 7)), "r7")
	inForce(t, s, "a higher revision than a past spec's", "rev", offer(t, s, "a", "rev", spec("r5", 5)), "r7")
	inForce(t, s, "a higher revision of a past spec", "rev", offer(t, s, "a", "rev", spec("r4", 9)), "r4")
	inForce(t, s, "no revision against one", "rev", offer(t, s, "d", "rev", spec("norev", 0)), "norev")

	// The spec in force enrolled at a higher revision keeps it: an older
	// revision of another spec then does not take force.
	offer(t, s, "a", "raise", spec("same", 5))
	if got := offer(t, s, "b", "raise", spec("same", 7)); got.Revision != 7 {
		t.Errorf("the spec in force enrolled at revision 7: answered revision %d", got.Revision)
	}
	if e := entry(t, s, "raise"); e.InForce.Revision != 7 || e.InForce.Replica != "a" {
		t.Errorf("the spec in force enrolled at revision 7: in force %+v, want revision 7 from a", e.InForce)
	}
	offer(t, s, "b", "raise", spec("same", 0))
	inForce(t, s, "revision 6 against the spec in force raised to 7", "raise", offer(t, s, "c", "raise", spec("other", 6)), "same")

	// A replica name that comes back with another spec no longer carries
	// the one in force; once no carrier is left, any spec takes force,
	// whatever the revisions (a StatefulSet's rollback).
	offer(t, s, "web-0", "sts", spec("o1", 3))
	offer(t, s, "web-1", "sts", spec("o2", 5))
	offer(t, s, "web-2", "sts", spec("o2", 5))
	e = inForce(t, s, "a carrier back with an older spec", "sts", offer(t, s, "web-2", "sts", spec("o1", 3)), "o2")
	if _, ok := e.Carriers["web-2"]; ok || len(e.Carriers) != 1 {
		t.Errorf("carriers after web-2 came back with o1: %v, want web-1 alone", e.Carriers)
	}
	inForce(t, s, "the last carrier back with an older spec", "sts", offer(t, s, "web-1", "sts", spec("o1", 3)), "o1")
}

// testCatalogClaims: claims and skips that name a spec not in force change
// nothing; those naming the spec in force, or none, follow the usual rules;
// a takeover under the new spec of a slot run under the old one is allowed.
func testCatalogClaims(t *testing.T, s slotstore.Store) {
	sl := slots(4)
	offer(t, s, "r1", "cc", spec("s1", 0))
	old := req("cc", sl[0], shortLease)
	old.Spec = "s1"
	mustWin(t, s, "r1", old)
	offer(t, s, "r2", "cc", spec("s2", 0))

	late := req("cc", sl[1], longLease)
	late.Spec = "s1"
	res := claimOne(t, s, "r1", late)
	wantStatus(t, "claim under the replaced spec", res, slotstore.Superseded)
	if res.Marker.Job != "cc" || !res.Marker.Slot.Equal(sl[1]) || res.Marker.State != "" || !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
		t.Errorf("superseded claim: %+v, Err %v", res, res.Err())
	}
	if _, ok := find(t, s, "cc", sl[1]); ok {
		t.Fatal("a superseded claim created a marker")
	}
	sk := skipOne(t, s, "r1", slotstore.SkipRequest{Job: "cc", Slot: sl[2], Reason: "missed", Spec: "s1"})
	wantStatus(t, "skip under the replaced spec", sk, slotstore.Superseded)
	if _, ok := find(t, s, "cc", sl[2]); ok {
		t.Fatal("a superseded skip recorded the slot")
	}
	cur := req("cc", sl[1], longLease)
	cur.Spec = "s2"
	mustWin(t, s, "r2", cur)
	sk = skipOne(t, s, "r2", slotstore.SkipRequest{Job: "cc", Slot: sl[2], Reason: "missed", Spec: "s2"})
	wantStatus(t, "skip under the spec in force", sk, slotstore.Skipped)
	mustWin(t, s, "r3", req("cc", sl[3], longLease)) // names no spec: not checked

	// The slot claimed under s1 is taken over under s2 once its lease is
	// gone, and not under s1.
	old.Lease = longLease
	deadline := time.Now().Add(patience)
	for {
		res = claimOne(t, s, "r1", old)
		wantStatus(t, "takeover under the replaced spec", res, slotstore.Superseded)
		take := old
		take.Spec = "s2"
		if res = claimOne(t, s, "r2", take); res.Status == slotstore.Won {
			break
		}
		if res.Status != slotstore.Held || time.Now().After(deadline) {
			t.Fatalf("takeover under the spec in force: %v", res.Status)
		}
		time.Sleep(res.Remaining + time.Millisecond)
	}
	if res.Claim.Attempt != 2 {
		t.Errorf("takeover: attempt %d, want 2", res.Claim.Attempt)
	}
	// A job with no spec in force takes a claim naming any spec.
	free := req("nospec", sl[0], longLease)
	free.Spec = "whatever"
	mustWin(t, s, "r1", free)
}

// testCatalogInvalid: bad enrolments and catalog reads fail with
// ErrInvalid and change nothing.
func testCatalogInvalid(t *testing.T, s slotstore.Store) {
	offer(t, s, "r1", "inv", spec("good", 0))
	bad := map[string]slotstore.EnrollParams{
		"fewer specs":  {Jobs: []string{"inv", "x"}, Replica: "r2", Specs: []slotstore.Spec{spec("new", 0)}},
		"no replica":   {Jobs: []string{"inv"}, Specs: []slotstore.Spec{spec("new", 0)}},
		"empty fp":     {Jobs: []string{"inv"}, Replica: "r2", Specs: []slotstore.Spec{{}}},
		"space in fp":  {Jobs: []string{"inv"}, Replica: "r2", Specs: []slotstore.Spec{{Fingerprint: "a b"}}},
		"long fp":      {Jobs: []string{"inv"}, Replica: "r2", Specs: []slotstore.Spec{{Fingerprint: strings.Repeat("f", 129)}}},
		"big body":     {Jobs: []string{"inv"}, Replica: "r2", Specs: []slotstore.Spec{{Fingerprint: "new", Body: make([]byte, 16<<10+1)}}},
		"negative rev": {Jobs: []string{"inv"}, Replica: "r2", Specs: []slotstore.Spec{{Fingerprint: "new", Revision: -1}}},
		"bad later":    {Jobs: []string{"inv", "y"}, Replica: "r2", Specs: []slotstore.Spec{spec("new", 0), {}}},
	}
	for name, p := range bad {
		if _, err := s.Enroll(t.Context(), p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("enroll with %s: %v, want ErrInvalid", name, err)
		}
	}
	if e := entry(t, s, "inv"); e.InForce.Fingerprint != "good" || len(e.Carriers) != 1 {
		t.Errorf("after refused enrolments: %+v", e)
	}
	for _, p := range []slotstore.CatalogParams{{Limit: -1}, {Limit: 10001}, {Jobs: []string{""}}} {
		if _, err := s.Catalog(t.Context(), p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("catalog %+v: %v, want ErrInvalid", p, err)
		}
	}
}

// testCatalogPages: Catalog lists by job in pages, and by name.
func testCatalogPages(t *testing.T, s slotstore.Store) {
	const n = 25
	p := slotstore.EnrollParams{Replica: "r1"}
	for i := range n {
		p.Jobs = append(p.Jobs, fmt.Sprintf("page-%02d", i))
		p.Specs = append(p.Specs, spec(fmt.Sprint("fp", i), 0))
	}
	gens, err := s.Enroll(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gens {
		if g.Spec.Fingerprint != p.Specs[i].Fingerprint {
			t.Errorf("%s: spec %q in force", g.Job, g.Spec.Fingerprint)
		}
	}
	var seen []string
	after := ""
	for {
		page, err := s.Catalog(t.Context(), slotstore.CatalogParams{After: after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 10 {
			t.Fatalf("a page of %d entries, limit 10", len(page))
		}
		for _, e := range page {
			seen = append(seen, e.Job)
		}
		after = page[len(page)-1].Job
	}
	if strings.Join(seen, ",") != strings.Join(p.Jobs, ",") {
		t.Errorf("pages listed %q, want %q", seen, p.Jobs)
	}
	some, err := s.Catalog(t.Context(), slotstore.CatalogParams{Jobs: []string{"page-07", "none", "page-03"}})
	if err != nil || len(some) != 2 || some[0].Job != "page-03" || some[1].Job != "page-07" {
		t.Errorf("catalog of named jobs: %+v, %v", some, err)
	}
}

// testCatalogBounds: an entry keeps the 32 newest past specs and the 32
// most recent carriers.
func testCatalogBounds(t *testing.T, s slotstore.Store) {
	for i := range 40 {
		offer(t, s, fmt.Sprint("r", i), "bound", spec(fmt.Sprint("b", i), 0))
	}
	e := entry(t, s, "bound")
	if e.InForce.Fingerprint != "b39" || len(e.Past) != 32 || e.Past[0].Fingerprint != "b38" || e.Past[31].Fingerprint != "b7" {
		t.Errorf("after 40 specs: in force %s, %d past from %s", e.InForce.Fingerprint, len(e.Past), e.Past[0].Fingerprint)
	}
	for i := range 40 {
		offer(t, s, fmt.Sprintf("c%02d", i), "bound", spec("b39", 0))
		time.Sleep(2 * time.Millisecond) // distinct store times
	}
	e = entry(t, s, "bound")
	if len(e.Carriers) != 32 {
		t.Errorf("%d carriers, want 32", len(e.Carriers))
	}
	for i := 8; i < 40; i++ {
		if _, ok := e.Carriers[fmt.Sprintf("c%02d", i)]; !ok {
			t.Errorf("carrier c%02d, one of the 32 most recent, was dropped", i)
		}
	}
}

// testCatalogConcurrent: replicas enrolling two specs with revisions at
// once leave the higher in force, and every answer names a spec that was
// offered; a claim under the loser is refused.
func testCatalogConcurrent(t *testing.T, s slotstore.Store) {
	const n = 8
	var wg sync.WaitGroup
	got := make([]slotstore.SpecRecord, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			sp := spec("low", 1)
			if i%2 == 1 {
				sp = spec("high", 2)
			}
			gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"together"}, Replica: fmt.Sprint("r", i), Specs: []slotstore.Spec{sp}})
			errs[i] = err
			if err == nil {
				got[i] = gens[0].Spec
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("enrolment %d: %v", i, errs[i])
		}
		if f := got[i].Fingerprint; f != "low" && f != "high" {
			t.Errorf("enrolment %d answered %q", i, f)
		}
		if i%2 == 1 && got[i].Fingerprint != "high" {
			t.Errorf("enrolment %d of the higher revision answered %q in force", i, got[i].Fingerprint)
		}
	}
	e := entry(t, s, "together")
	if e.InForce.Fingerprint != "high" || len(e.Carriers) != n/2 {
		t.Errorf("after concurrent enrolments: %s in force, carriers %v", e.InForce.Fingerprint, e.Carriers)
	}
	r := req("together", slots(1)[0], longLease)
	r.Spec = "low"
	wantStatus(t, "claim under the lower revision", claimOne(t, s, "r0", r), slotstore.Superseded)
}
