package runtrace

import (
	"context"
	"testing"
	"time"
)

// The IDs of a run's span are the same wherever they are derived; every
// attempt of a slot shares the trace, and no two attempts, slots or jobs
// share a span.
func TestRunIDs(t *testing.T) {
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	tid, sid := RunIDs("prod", "invoices", slot, 1)
	if !tid.IsValid() || !sid.IsValid() {
		t.Fatalf("invalid IDs %v %v", tid, sid)
	}
	berlin := slot.In(time.FixedZone("CET", 3600))
	if t2, s2 := RunIDs("prod", "invoices", berlin, 1); t2 != tid || s2 != sid {
		t.Errorf("the same slot in another zone gets other IDs")
	}
	if t2, s2 := RunIDs("prod", "invoices", slot, 2); t2 != tid || s2 == sid {
		t.Errorf("attempt 2: trace %v span %v, want the same trace and another span", t2, s2)
	}
	for _, other := range []struct {
		job  string
		slot time.Time
	}{{"invoices", slot.Add(time.Second)}, {"invoice", slot}, {"invoices\x00", slot}} {
		if t2, s2 := RunIDs("prod", other.job, other.slot, 1); t2 == tid || s2 == sid {
			t.Errorf("%q@%v shares an ID with invoices@%v", other.job, other.slot, slot)
		}
	}
	if t2, s2 := RunIDs("staging", "invoices", slot, 1); t2 == tid || s2 == sid {
		t.Errorf("another cluster's run of invoices@%v shares an ID with prod's", slot)
	}
	ctx := WithIDs(context.Background(), tid, sid)
	if t2, s2, ok := IDs(ctx); !ok || t2 != tid || s2 != sid {
		t.Errorf("IDs(WithIDs) = %v %v %v", t2, s2, ok)
	}
	if _, _, ok := IDs(context.Background()); ok {
		t.Errorf("IDs of a bare context")
	}
}
