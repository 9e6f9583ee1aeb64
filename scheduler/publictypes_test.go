package scheduler

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
	"go.yaml.in/yaml/v3"
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
	if got := backfillResult(engine.BackfillResult{Job: "j"}); got.Slots != nil {
		t.Errorf("no slots became %#v", got.Slots)
	}
	if BackfillRun != engine.BackfillRun || BackfillLeave != engine.BackfillLeave {
		t.Errorf("actions %q, %q; the engine's %q, %q", BackfillRun, BackfillLeave, engine.BackfillRun, engine.BackfillLeave)
	}
}

// A Config written out as YAML reads back with its store block: the
// chosen kind's options survive the round trip.
func TestStoreConfigRoundTrip(t *testing.T) {
	in, err := Parse("in.yaml", []byte("store:\n  kind: sqlite\n  sqlite: {path: /var/lib/app/slots.db}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(in.Store)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("out.yaml", append([]byte("store:\n"), indent(out)...))
	if err != nil {
		t.Fatalf("reading back\n%s: %v", out, err)
	}
	if !reflect.DeepEqual(back.Store, in.Store) {
		t.Errorf("read back %+v from\n%s\nwant %+v", back.Store, out, in.Store)
	}
}

func indent(b []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) > 0 {
			out = append(append(out, "  "...), line...)
		}
	}
	return out
}
