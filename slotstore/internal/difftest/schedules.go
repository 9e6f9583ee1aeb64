package difftest

import (
	"errors"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
)

// scheduleNames are the IDs schedule writes take: s is also a job the
// claims, skips and enrolments take (jobNames), t is a schedule's alone, a
// is a job the enrolments make the configuration's.
var scheduleNames = []string{"s", "t", "a"}

// scheduleErrs are the refusals a schedule write answers.
var scheduleErrs = []error{slotstore.ErrVersionMismatch, slotstore.ErrNoSchedule, slotstore.ErrNotSchedule}

// writeSchedules writes a batch of one to three random schedule writes —
// puts and deletes of scheduleNames, under the
// fingerprints they name, at any version, none, the version memstore has
// or another — in both stores, compares each write's answer, then the two
// catalogs: the write rule of Schedules held as data, as the backend
// encodes it, against memstore's.
func (d *driver) writeSchedules() {
	p := slotstore.WriteSchedulesParams{By: fmt.Sprintf("w%d", d.rng.IntN(3))}
	for range 1 + d.rng.IntN(3) {
		id := scheduleNames[d.rng.IntN(len(scheduleNames))]
		w := slotstore.ScheduleWrite{ID: id, IfVersion: d.ifVersion(id)}
		if d.rng.IntN(4) == 0 {
			w.Delete = true
		} else {
			w.Run = []string{"j1", "j2"}[d.rng.IntN(2)]
			fp := fingerprints[d.rng.IntN(len(fingerprints))]
			w.Spec = slotstore.Spec{Fingerprint: fp, Body: []byte(`{"schedule":"` + fp + `"}`)}
		}
		p.Writes = append(p.Writes, w)
	}
	d.settle(scheduleNames)
	gr, gerr := d.got.WriteSchedules(d.t.Context(), p)
	mr, merr := d.mem.WriteSchedules(d.t.Context(), p)
	if gerr != nil || merr != nil {
		d.t.Fatalf("step %d: write schedules %+v: backend %v, memstore %v", d.step, p, gerr, merr)
	}
	for _, w := range p.Writes {
		d.claimed[w.ID] = true
	}
	for i := range p.Writes {
		d.writes++
		if ge, me := refusal(gr[i].Err), refusal(mr[i].Err); ge != me {
			d.t.Fatalf("step %d: write %d of %+v: backend answered %v, memstore %v", d.step, i, p.Writes, gr[i].Err, mr[i].Err)
		}
		if diff := diffEntry(gr[i].Entry, mr[i].Entry); gr[i].Err == nil && diff != "" {
			d.t.Fatalf("step %d: write %d of %+v: %s", d.step, i, p.Writes, diff)
		}
	}
	d.compareCatalogs()
}

// ifVersion is a random precondition for a write of id: any version, none
// (a create), the version memstore has, or one it does not.
func (d *driver) ifVersion(id string) int64 {
	switch d.rng.IntN(4) {
	case 0:
		return slotstore.AnyVersion
	case 1:
		return 0
	}
	var v int64
	if es, err := d.mem.Catalog(d.t.Context(), slotstore.CatalogParams{Jobs: []string{id}}); err == nil && len(es) == 1 && !es[0].Deleted {
		v = es[0].Version
	}
	if d.rng.IntN(2) == 0 {
		return v + 1 + int64(d.rng.IntN(2))
	}
	return v
}

// refusal is which of scheduleErrs err is, or -1 for none (nil), -2 for
// another error.
func refusal(err error) int {
	if err == nil {
		return -1
	}
	for i, e := range scheduleErrs {
		if errors.Is(err, e) {
			return i
		}
	}
	return -2
}
