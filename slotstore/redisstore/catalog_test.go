package redisstore_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestCatalogExact: revisions past a Lua number's 53 bits are ordered and
// kept exactly, and bodies and replica names holding the separators of the
// past specs' records come back byte for byte.
func TestCatalogExact(t *testing.T) {
	r := testserver.StartRedis(t)
	s := open(t, r.Addr())
	const big = int64(1) << 62 // 2^62+1 and 2^62+2 are one float64
	body := []byte("3:a,b,\x00\xff:,")
	enroll := func(replica, fp string, rev int64) slotstore.SpecRecord {
		t.Helper()
		gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"exact"}, Replica: replica,
			Specs: []slotstore.Spec{{Fingerprint: fp, Body: body, Revision: rev}}})
		if err != nil {
			t.Fatalf("enroll %s: %v", fp, err)
		}
		return gens[0].Spec
	}
	enroll("r:1,", "low", big+1)
	if got := enroll("r2", "high", big+2); got.Fingerprint != "high" || got.Revision != big+2 || !bytes.Equal(got.Body, body) {
		t.Fatalf("a revision higher by one: in force %+v", got)
	}
	if got := enroll("r3", "low", big+1); got.Fingerprint != "high" {
		t.Fatalf("a revision lower by one: %s in force", got.Fingerprint)
	}
	es, err := s.Catalog(t.Context(), slotstore.CatalogParams{})
	if err != nil || len(es) != 1 {
		t.Fatalf("catalog: %+v, %v", es, err)
	}
	e := es[0]
	if len(e.Past) != 1 {
		t.Fatalf("past: %+v", e.Past)
	}
	p := e.Past[0]
	if p.Fingerprint != "low" || p.Revision != big+1 || p.Replica != "r:1," || !bytes.Equal(p.Body, body) ||
		p.Until.IsZero() || p.Until.Before(p.Since) {
		t.Errorf("past spec: %+v", p)
	}
}

// TestCatalogCost: claims and skips naming no spec read nothing more than
// before; those naming one read the spec in force once a job and batch; an
// enrolment with specs is one script call.
func TestCatalogCost(t *testing.T) {
	r := testserver.StartRedis(t)
	s := open(t, r.Addr())
	stats := newCommandStats(t, r.Addr())
	var gens []slotstore.Generation
	got := stats.count(func() {
		var err error
		gens, err = s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"a", "b"}, Replica: "r1",
			Specs: []slotstore.Spec{{Fingerprint: "fa"}, {Fingerprint: "fb"}}})
		if err != nil {
			t.Fatal(err)
		}
	})
	if got["evalsha"]+got["eval"] != 1 || gens[1].Spec.Fingerprint != "fb" {
		t.Errorf("enrolment of two specs: %v, answered %+v", got, gens)
	}
	reqs := append(batch("a", 0, 5, time.Minute), batch("b", 0, 5, time.Minute)...)
	got = stats.count(func() { won(t, claim(t, s, "r1", reqs...)) })
	if got["hget"] != 0 {
		t.Errorf("claims naming no spec: %v, want no HGET", got)
	}
	reqs = append(batch("a", 5, 5, time.Minute), batch("b", 5, 5, time.Minute)...)
	for i := range reqs {
		reqs[i].Spec = "f" + reqs[i].Job
	}
	reqs[9].Spec = "old"
	var res []slotstore.ClaimResult
	got = stats.count(func() { res = claim(t, s, "r1", reqs...) })
	if got["hget"] != 2 || got["evalsha"] != 1 {
		t.Errorf("claims naming specs: %v, want one EVALSHA and an HGET a job", got)
	}
	won(t, res[:9])
	if res[9].Status != slotstore.Superseded {
		t.Errorf("claim under another spec: %v", res[9].Status)
	}
}
