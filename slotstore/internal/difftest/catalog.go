package difftest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// fingerprints are the specs the random operations enroll and name: few,
// so that specs come back, replace one another and are refused.
var fingerprints = []string{"f1", "f2", "f3", "f4"}

// specName is the spec a random claim or skip names: none half the time.
func (d *driver) specName() string {
	if d.rng.IntN(2) == 0 {
		return ""
	}
	return fingerprints[d.rng.IntN(len(fingerprints))]
}

// randomSpec is a spec with or without a revision and Supersedes.
func (d *driver) randomSpec() slotstore.Spec {
	fp := fingerprints[d.rng.IntN(len(fingerprints))]
	sp := slotstore.Spec{Fingerprint: fp, Body: []byte("{\"spec\":\"" + fp + "\"}")}
	if d.rng.IntN(2) == 0 {
		sp.Revision = int64(1 + d.rng.IntN(3))
	}
	if d.rng.IntN(3) == 0 {
		sp.Supersedes = fingerprints[d.rng.IntN(len(fingerprints))]
	}
	return sp
}

// enrollSpecs enrolls a few jobs in both stores, with specs (now and then
// none, or an invalid one), compares the specs in force they answer and
// then the two catalogs.
func (d *driver) enrollSpecs() {
	p := slotstore.EnrollParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(4))}
	withSpecs := d.rng.IntN(5) != 0
	if withSpecs {
		p.Specs = []slotstore.Spec{}
	}
	for range 1 + d.rng.IntN(3) {
		job := jobNames[d.rng.IntN(len(jobNames))]
		p.Jobs = append(p.Jobs, job)
		if withSpecs {
			p.Specs = append(p.Specs, d.randomSpec())
		}
	}
	if withSpecs && d.rng.IntN(20) == 0 {
		p.Specs[d.rng.IntN(len(p.Specs))].Fingerprint = "" // refused, and nothing changes
	}
	d.settle(p.Jobs)
	gg, gerr := d.got.Enroll(d.t.Context(), p)
	mg, merr := d.mem.Enroll(d.t.Context(), p)
	switch {
	case errors.Is(gerr, slotstore.ErrInvalid) && errors.Is(merr, slotstore.ErrInvalid):
		d.compareCatalogs()
		return
	case gerr != nil || merr != nil:
		d.t.Fatalf("step %d: enroll %+v: backend %v, memstore %v", d.step, p, gerr, merr)
	}
	for _, j := range p.Jobs {
		d.claimed[j] = true
	}
	for i := range p.Jobs {
		if diff := diffSpec(gg[i].Spec, mg[i].Spec, true); diff != "" {
			d.t.Fatalf("step %d: enroll %+v: job %d: spec in force %s", d.step, p, i, diff)
		}
	}
	d.compareCatalogs()
}

// settle waits, before a call that may begin the generation of one of
// jobs, so that the generation it begins comes after every skip so far by
// the backend's clock too.
func (d *driver) settle(jobs []string) {
	for _, j := range jobs {
		if !d.claimed[j] {
			time.Sleep(2 * time.Millisecond)
			return
		}
	}
}

// compareCatalogs fails the test unless both stores' catalogs agree, but
// for the stores' times.
func (d *driver) compareCatalogs() {
	ge, gerr := d.got.Catalog(d.t.Context(), slotstore.CatalogParams{})
	me, merr := d.mem.Catalog(d.t.Context(), slotstore.CatalogParams{})
	if gerr != nil || merr != nil {
		d.t.Fatalf("step %d: catalog: backend %v, memstore %v", d.step, gerr, merr)
	}
	if len(ge) != len(me) {
		d.t.Fatalf("step %d: catalog of %d jobs, memstore %d", d.step, len(ge), len(me))
	}
	for i, g := range ge {
		m := me[i]
		if diff := diffEntry(g, m); diff != "" {
			d.t.Fatalf("step %d: catalog of %s: %s", d.step, g.Job, diff)
		}
		if f := d.inForce[m.Job]; f != "" && f != m.InForce.Fingerprint {
			d.switches++
		}
		d.inForce[m.Job] = m.InForce.Fingerprint
	}
}

// diffEntry describes how two catalog entries differ, but for times.
func diffEntry(g, m slotstore.CatalogEntry) string {
	if g.Job != m.Job {
		return fmt.Sprintf("job %s, memstore %s", g.Job, m.Job)
	}
	if diff := diffSpec(g.InForce, m.InForce, true); diff != "" {
		return "in force: " + diff
	}
	if len(g.Past) != len(m.Past) {
		return fmt.Sprintf("%d past specs, memstore %d", len(g.Past), len(m.Past))
	}
	for i := range g.Past {
		if diff := diffSpec(g.Past[i], m.Past[i], false); diff != "" {
			return fmt.Sprintf("past spec %d: %s", i, diff)
		}
	}
	if g.Run != m.Run || g.Version != m.Version || g.Deleted != m.Deleted || (g.Seq > 0) != (m.Seq > 0) {
		return fmt.Sprintf("schedule run %q version %d seq %d deleted %t, memstore run %q version %d seq %d deleted %t",
			g.Run, g.Version, g.Seq, g.Deleted, m.Run, m.Version, m.Seq, m.Deleted)
	}
	gc, mc := carriers(g), carriers(m)
	if !slices.Equal(gc, mc) {
		return fmt.Sprintf("carriers %v, memstore %v", gc, mc)
	}
	return ""
}

// diffSpec describes how two spec records differ, but for the stores'
// times; inForce says whether Until must be zero.
func diffSpec(g, m slotstore.SpecRecord, inForce bool) string {
	if g.Fingerprint != m.Fingerprint || g.Revision != m.Revision || g.Replica != m.Replica || !bytes.Equal(g.Body, m.Body) ||
		g.Since.IsZero() != m.Since.IsZero() || g.Until.IsZero() != inForce || m.Until.IsZero() != inForce {
		return fmt.Sprintf("%+v, memstore %+v", g, m)
	}
	return ""
}

// carriers are the names of e's carriers, sorted.
func carriers(e slotstore.CatalogEntry) []string {
	var out []string
	for r := range e.Carriers {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}
