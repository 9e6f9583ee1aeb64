package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore/memstore"
)

// Overtaken slots of jobs with different starting deadlines, owed out of
// the order their windows close, come back each once, only after their
// windows have closed, earliest closing first.
func TestOwedSlotsComeBackAsTheirWindowsClose(t *testing.T) {
	var a admission
	a.init(1)
	o := &a.owed
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
				if now.Before(slot.Add(s.p.deadline)) {
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
	if o.n != 0 || len(o.by) != 0 || o.secs.Len() != 0 {
		t.Errorf("left: n %d, %d seconds, heap %d", o.n, len(o.by), o.secs.Len())
	}
}

// A slot of the schedule held back while the pauses were read (a retry
// entry, held) is still its job's waiting slot: the job's next slot
// overtakes it, and it is owed at once when it comes back after that slot,
// so a job waits with one slot whatever the pauses' reads take.
func TestHeldSlotsAreOvertaken(t *testing.T) {
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: []JobSpec{job("a", nil)}, MaxRunning: 1})
	if err != nil {
		t.Fatal(err)
	}
	var runs sync.WaitGroup
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
	l.runs.active.Store(1) // full
	p := e.jobs().plans[0]
	now := time.Now().Truncate(time.Second)
	held := func(slot time.Time) *entry { return &entry{at: now, p: p, slot: slot, kind: retry, held: true} }
	fire := func(slot time.Time) *entry { return &entry{at: now, p: p, slot: slot, kind: fire} }

	l.admit([]*entry{held(now.Add(-time.Second))}, nil)
	l.admit([]*entry{fire(now)}, nil)
	if l.adm.n != 1 || l.adm.owed.n != 1 {
		t.Fatalf("a held slot, then the next: %d waiting, %d owed; want 1 and 1", l.adm.n, l.adm.owed.n)
	}
	l.admit([]*entry{held(now.Add(-2 * time.Second))}, nil)
	if l.adm.n != 1 || l.adm.owed.n != 2 {
		t.Fatalf("an older slot held back: %d waiting, %d owed; want 1 and 2", l.adm.n, l.adm.owed.n)
	}
	l.admit([]*entry{held(now)}, nil)
	if l.adm.n != 1 || l.adm.owed.n != 2 {
		t.Fatalf("the waiting slot again: %d waiting, %d owed; want 1 and 2", l.adm.n, l.adm.owed.n)
	}
}

// New slots held back while a read of the pauses is under way wait for its
// answer off the heap, and are back in it, due, once it comes.
func TestHeldSlotsWaitForTheReadUnderWay(t *testing.T) {
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: []JobSpec{job("a", nil), job("b", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	var runs sync.WaitGroup
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
	now := time.Now()
	var batch []*entry
	for _, p := range e.jobs().plans {
		batch = append(batch, &entry{at: now, p: p, slot: now.Truncate(time.Second), kind: fire})
	}
	watch := &entry{at: now, p: e.jobs().plans[0], slot: now.Truncate(time.Second).Add(-time.Second), kind: watch}
	l.pauses.reading = true
	if kept := l.holdNew(append(batch, watch)); len(kept) != 1 || kept[0] != watch {
		t.Fatalf("kept %d entries, want the watch alone", len(kept))
	}
	if len(l.h) != 0 || len(l.pauses.held) != 2 {
		t.Fatalf("%d in the heap, %d held; want 0 and 2", len(l.h), len(l.pauses.held))
	}
	for _, e := range l.pauses.held {
		if e.kind != retry || !e.held {
			t.Errorf("held entry of %s: kind %v, held %v; want a held retry", e.p.name, e.kind, e.held)
		}
	}
	l.notePauses(pauseRead{sent: time.Now()})
	if len(l.h) != 2 || len(l.pauses.held) != 0 || l.h.peek().at.After(time.Now()) {
		t.Fatalf("after the answer: %d in the heap, %d held; want both back, due", len(l.h), len(l.pauses.held))
	}
}

// A reload that changes a job while its slot waits for room: the new
// plan's entry of the same slot is queued, and claimed once there is room,
// not dropped behind the retired plan's, which never starts.
func TestReloadedSlotWaitingIsClaimedUnderTheNewPlan(t *testing.T) {
	e1, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: []JobSpec{job("a", nil)}, MaxRunning: 1})
	if err != nil {
		t.Fatal(err)
	}
	e2 := newEngine(t, job("a", nil))
	var runs sync.WaitGroup
	l := newLoop(e1, memstore.New(memstore.Options{}), context.Background(), &runs)
	l.runs.active.Store(1) // full
	p1, p2 := e1.jobs().plans[0], e2.jobs().plans[0]
	now := time.Now().Truncate(time.Second)
	l.admit([]*entry{{at: now, p: p1, slot: now, kind: fire}}, nil)
	p1.retired.Store(true)
	e1.set.Store(e2.jobs())
	l.admit([]*entry{{at: now, p: p2, slot: now, kind: fire}}, nil)
	l.runs.active.Store(0) // room
	l.adm.swept = time.Now()
	if out, _, _ := l.admit(nil, nil); len(out) != 1 || out[0].p != p2 {
		t.Fatalf("%d claimed, %d owed; want the slot claimed under the new plan", len(out), l.adm.owed.n)
	}
}

// During a start-up, the answer to a read of the pauses puts the slots
// held for it back in the heap, as it does once the loop runs.
func TestHeldSlotsComeBackDuringAStartUp(t *testing.T) {
	e := newEngine(t, job("a", nil))
	var runs sync.WaitGroup
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
	now := time.Now()
	l.pauses.reading = true
	l.holdNew([]*entry{{at: now, p: e.jobs().plans[0], slot: now.Truncate(time.Second), kind: fire}})
	l.pauses.reads <- pauseRead{sent: time.Now()}
	l.serveDue(context.Background())
	if l.pauses.reading || len(l.pauses.held) != 0 {
		t.Fatalf("the answer was not taken: %d held, %d in the heap", len(l.pauses.held), len(l.h))
	}
}

// With no slot waiting for room, the loop looks at the overtaken slots
// when the first window closes, not every second before.
func TestAdmitInWaitsForTheFirstWindowToClose(t *testing.T) {
	e := newEngine(t, job("a", nil))
	var runs sync.WaitGroup
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
	p := e.jobs().plans[0]
	p.deadline = time.Hour
	l.adm.owed.add(p, time.Now())
	if d, ok := l.admitIn(); !ok || d < 59*time.Minute || d > time.Hour+time.Second {
		t.Errorf("admitIn = %v, %v; want about an hour", d, ok)
	}
}

// With an overtaken slot whose window has closed, the loop wakes at once
// to record it: sleep's wait reaches zero, which is what makes it wake.
func TestAdmitInWakesForAClosedWindow(t *testing.T) {
	now := time.Date(2026, 12, 8, 0, 0, 0, 500_000_000, time.UTC)
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: func() time.Time { return now },
		Grace: time.Second, Jobs: []JobSpec{job("a", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	var runs sync.WaitGroup
	l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
	p := e.jobs().plans[0]
	p.deadline = time.Second
	l.adm.swept = time.Now() // the waiting slots were looked through just now
	l.adm.owed.add(p, now.Add(-3*time.Second))
	if d, ok := l.admitIn(); !ok || d != 0 {
		t.Errorf("admitIn = %v, %v; want 0, true", d, ok)
	}
	if _, missed, _ := l.admit(nil, nil); len(missed) != 1 {
		t.Errorf("%d recorded on the wake; want the closed slot, whatever lateEvery", len(missed))
	}
}

// A window that closes on a whole second is closed from that instant, as
// the store judges a skip's NotBefore, and not a nanosecond before.
func TestOwedSlotOfAWholeSecondClosesAtIt(t *testing.T) {
	var a admission
	a.init(1)
	p := &plan{name: "a", deadline: time.Minute}
	slot := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	a.owed.add(p, slot)
	closes := slot.Add(time.Minute)
	if got := a.owed.closed(closes.Add(-time.Nanosecond)); got != nil {
		t.Fatalf("came back a nanosecond before its window closed")
	}
	if got := a.owed.closed(closes); len(got) != 1 {
		t.Fatalf("%d came back as its window closed; want 1", len(got))
	}
}
