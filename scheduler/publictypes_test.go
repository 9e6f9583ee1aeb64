package scheduler

import (
	"reflect"
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// The facade's types mirror the engine's field for field, so a field the
// engine gains is not silently dropped on its way to users.
func TestPublicTypesMirrorTheEngine(t *testing.T) {
	for _, c := range []struct{ pub, in any }{
		{BackfillParams{}, engine.BackfillParams{}},
		{BackfillResult{}, engine.BackfillResult{}},
		{BackfillSlot{}, engine.BackfillSlot{}},
	} {
		pt, it := reflect.TypeOf(c.pub), reflect.TypeOf(c.in)
		if pt.NumField() != it.NumField() {
			t.Errorf("%v has %d fields, %v %d", pt, pt.NumField(), it, it.NumField())
			continue
		}
		for i := range pt.NumField() {
			if pt.Field(i).Name != it.Field(i).Name {
				t.Errorf("%v field %d is %s, %v's %s", pt, i, pt.Field(i).Name, it, it.Field(i).Name)
			}
		}
	}
	in := engine.BackfillResult{Job: "j", Slots: []engine.BackfillSlot{{
		Slot: time.Unix(60, 0), Action: engine.BackfillRun, State: slotstore.StateSkipped, Reason: "r",
		Fence: 7, End: engine.EndFailed, Err: "e",
	}}}
	want := BackfillResult{Job: "j", Slots: []BackfillSlot{{
		Slot: time.Unix(60, 0), Action: BackfillRun, State: slotstore.StateSkipped, Reason: "r",
		Fence: 7, End: EndFailed, Err: "e",
	}}}
	if got := backfillResult(in); !reflect.DeepEqual(got, want) {
		t.Errorf("backfillResult(%+v) = %+v, want %+v", in, got, want)
	}
}
