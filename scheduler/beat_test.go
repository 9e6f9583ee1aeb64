package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A running replica beats: the store lists it live, with its build and the
// duty it leads under that term's fence and the revision of the
// configuration it runs; once it stops, its beat runs out
// and it is listed gone. Its engine reports the same term.
func TestReplicasBeatWithTheirDuties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		reg := jobs.NewRegistry()
		log := &termLog{}
		reg.RegisterDuty("fanout", log.duty)
		conf := `duties: {fanout: {lease: 3s}}`
		a := replica(t, st, "a", "revision: 7\n"+conf, reg)
		stopA := start(t, a)
		synctest.Wait()
		stopB := start(t, replica(t, st, "b", conf, reg))
		time.Sleep(6 * time.Second)
		terms, _ := log.snapshot()
		if len(terms) != 1 || terms[0].replica != "a" {
			t.Fatalf("terms %+v, want a's", terms)
		}
		rs, err := st.Replicas(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || rs[0].Replica != "a" || rs[1].Replica != "b" || !rs[0].Live || !rs[1].Live {
			t.Fatalf("replicas %+v, want a and b live", rs)
		}
		if rs[0].Revision != 7 || rs[1].Revision != 0 {
			t.Errorf("revisions a %d, b %d, want 7 and 0 (none)", rs[0].Revision, rs[1].Revision)
		}
		if v := buildinfo.Read().Version; rs[0].Version != v {
			t.Errorf("a's version %q, want %q", rs[0].Version, v)
		}
		if d := rs[0].Duties; len(d) != 1 || d[0].Name != "fanout" || d[0].Fence != terms[0].fence {
			t.Errorf("a's duties %+v, want fanout under fence %d", d, terms[0].fence)
		}
		if len(rs[1].Duties) != 0 {
			t.Errorf("b leads %+v, want nothing", rs[1].Duties)
		}
		if ds := a.eng.Duties(); len(ds) != 1 || !ds[0].Leading || ds[0].Fence != terms[0].fence {
			t.Errorf("a's engine says %+v", ds)
		}
		stopA()
		if ds := a.eng.Duties(); len(ds) != 1 || ds[0].Leading {
			t.Errorf("after shutdown a's engine says %+v", ds)
		}
		time.Sleep(20 * time.Second)
		rs, err = st.Replicas(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || rs[0].Live || !rs[1].Live {
			t.Errorf("after a stopped: %+v, want a gone and b live", rs)
		}
		if d := rs[1].Duties; len(d) != 1 || d[0].Name != "fanout" {
			t.Errorf("b's duties after a stopped: %+v", d)
		}
		stopB()
	})
}
