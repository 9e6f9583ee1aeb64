package engine

import (
	"testing"
	"time"
)

// Overtaken slots of jobs with different starting deadlines, owed out of
// the order their windows close, come back each once, only after their
// windows have closed, earliest closing first.
func TestOwedSlotsComeBackAsTheirWindowsClose(t *testing.T) {
	var o owedSlots
	o.by = make(map[int64][]owedSlot)
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	short := &plan{name: "short", deadline: 1500 * time.Millisecond}
	long := &plan{name: "long", deadline: time.Minute}
	o.add(long, t0)
	o.add(short, t0.Add(2*time.Second))
	o.add(short, t0)
	o.add(long, t0.Add(time.Second))
	if o.n != 4 {
		t.Fatalf("n = %d, want 4", o.n)
	}
	var got []string
	for now := t0; now.Before(t0.Add(2 * time.Minute)); now = now.Add(100 * time.Millisecond) {
		for b := o.closed(now); b != nil; b = o.closed(now) {
			for _, s := range b {
				slot := time.Unix(s.slot, 0)
				if !now.After(slot.Add(s.p.deadline)) {
					t.Errorf("%s@%s came back at %s, before its window closed", s.p.name, slot.UTC().Format(time.TimeOnly), now.Format(time.TimeOnly))
				}
				if late := now.Sub(slot.Add(s.p.deadline)); late > time.Second {
					t.Errorf("%s@%s came back %v after its window closed", s.p.name, slot.UTC().Format(time.TimeOnly), late)
				}
				got = append(got, s.p.name+"@"+slot.UTC().Format(time.TimeOnly))
			}
		}
	}
	want := []string{"short@12:00:00", "short@12:00:02", "long@12:00:00", "long@12:00:01"}
	if len(got) != len(want) {
		t.Fatalf("came back %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("came back %v, want %v", got, want)
		}
	}
	if o.n != 0 || len(o.by) != 0 || len(o.secs) != 0 {
		t.Errorf("left: n %d, %d seconds, heap %d", o.n, len(o.by), len(o.secs))
	}
}
