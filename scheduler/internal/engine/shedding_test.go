package engine

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// An answer to a read of the pauses that the loop takes too late to decide
// the slots due now (it was busy for longer than pauseFresh) sends another
// read, and the slots go on with its answer rather than being held back
// for the next wake.
func TestStaleReadOfThePausesIsSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, job("a", nil))
		var runs sync.WaitGroup
		l := newLoop(e, memstore.New(memstore.Options{}), context.Background(), &runs)
		defer l.bg.Wait()
		now := time.Now()
		l.pauses.reading = true
		l.pauses.reads <- pauseRead{sent: now.Add(-2 * time.Second)}
		batch := []*entry{{at: now, p: e.jobs().plans[0], slot: now.Truncate(time.Second), kind: fire}}
		if kept := l.dropPaused(context.Background(), batch); len(kept) != 1 {
			t.Fatalf("%d kept, %d held, %d back in the heap; want the slot kept", len(kept), len(l.pauses.held), len(l.h))
		}
		if l.pauses.sent.Before(now) {
			t.Errorf("decided by a read sent at %v, before the slot waited (%v)", l.pauses.sent, now)
		}
	})
}

// Shed slots are recorded by the recorder, off the loop goroutine: a slot
// whose window has closed is recorded missed, and one the store says is
// not missed yet comes back to the loop, looked at again when it is.
func TestShedSlotsAreRecordedOffTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		l, p := recording(t, ctx, st)
		defer l.bg.Wait()
		defer cancel()
		now := time.Now().Truncate(time.Second)
		closed, open := now.Add(-2*time.Minute), now.Add(-time.Second)
		l.recordShed(ctx, []slotstore.SkipRequest{p.missedSkip(closed, reasonOverloaded), p.missedSkip(open, reasonOverloaded)})
		synctest.Wait()
		ms, err := st.History(ctx, slotstore.HistoryParams{Job: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || !ms[0].Slot.Equal(closed) || ms[0].Reason != reasonOverloaded {
			t.Fatalf("recorded %+v; want the closed slot alone, overloaded", ms)
		}
		if !l.receive(nil, nil) || len(l.h) != 1 {
			t.Fatalf("%d entries in the heap; want the open slot back", len(l.h))
		}
		if top := l.h.peek(); top.kind != lapse || !top.slot.Equal(open) || top.at.Before(open.Add(p.deadline)) {
			t.Errorf("entry %v of %v at %v; want a lapse of the open slot once its window closes", top.kind, top.slot, top.at)
		}
	})
}

// With the recorder's queue full, the loop records the slots it sheds
// itself, at once: a recorder that falls behind slows the loop rather than
// leaving slots unrecorded.
func TestFullRecorderLeavesTheLoopToRecord(t *testing.T) {
	e := newEngine(t, job("a", nil))
	st := memstore.New(memstore.Options{})
	var runs sync.WaitGroup
	l := newLoop(e, st, context.Background(), &runs)
	l.rec = shedRecorder{in: make(chan []slotstore.SkipRequest, 1), back: make(chan []skipAnswer, 1)}
	p := e.jobs().plans[0]
	now := time.Now().Truncate(time.Second)
	first, second := now.Add(-3*time.Minute), now.Add(-2*time.Minute)
	l.recordShed(context.Background(), []slotstore.SkipRequest{p.missedSkip(first, reasonOverloaded)})
	l.recordShed(context.Background(), []slotstore.SkipRequest{p.missedSkip(second, reasonOverloaded)})
	if got := <-l.rec.in; len(got) != 1 || !got[0].Slot.Equal(first) {
		t.Fatalf("queued %+v; want the first slot", got)
	}
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || !ms[0].Slot.Equal(second) || ms[0].Reason != reasonOverloaded {
		t.Fatalf("recorded %+v; want the second slot, recorded by the loop", ms)
	}
}

// A skip answered Superseded after a reload changed its job is no word on
// the job's new plan, which is not marked in conflict.
func TestSupersededSkipOfAReplacedPlan(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	j := job("a", nil)
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Jobs: []JobSpec{j}, Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.enroll(ctx, st, e.jobs().plans)
	p1 := e.jobs().plans[0]
	j.Deadline = 2 * time.Minute
	if _, err := e.Reload(ctx, st, []JobSpec{j}, 2); err != nil {
		t.Fatal(err)
	}
	p2 := e.jobs().plans[0]
	e.enroll(ctx, st, []*plan{p2})
	p1.retired.Store(true)
	var runs sync.WaitGroup
	l := newLoop(e, st, ctx, &runs)
	closed := time.Now().Truncate(time.Second).Add(-5 * time.Minute)
	l.recordSkips(ctx, []slotstore.SkipRequest{p1.missedSkip(closed, reasonOverloaded)})
	if p2.inConflict() {
		t.Errorf("the new plan was marked in conflict by the old one's skip: %+v", p2.conflict.Load())
	}
}

// blockedSkips is a store whose first Skip waits for its context to end.
type blockedSkips struct {
	slotstore.Store
	first sync.Once
}

func (b *blockedSkips) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	blocked := false
	b.first.Do(func() { blocked = true })
	if blocked {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.Store.Skip(ctx, p)
}

// The batches still queued for the recorder as the loop ends are recorded,
// within drainFor.
func TestRecorderDrainsItsQueueAsTheLoopEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New(memstore.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		l, p := recording(t, ctx, &blockedSkips{Store: mem})
		now := time.Now().Truncate(time.Second)
		l.recordShed(ctx, []slotstore.SkipRequest{p.missedSkip(now.Add(-3*time.Minute), reasonOverloaded)})
		synctest.Wait() // the recorder waits in its first Skip
		queued := now.Add(-2 * time.Minute)
		l.recordShed(ctx, []slotstore.SkipRequest{p.missedSkip(queued, reasonOverloaded)})
		cancel()
		close(l.rec.in) // as the loop does when it ends
		began := time.Now()
		l.bg.Wait()
		if waited := time.Since(began); waited > drainFor {
			t.Errorf("the recorder ended %v after the loop, over drainFor", waited)
		}
		ms, err := mem.History(context.Background(), slotstore.HistoryParams{Job: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || !ms[0].Slot.Equal(queued) {
			t.Fatalf("recorded %+v; want the queued slot", ms)
		}
	})
}

// recording is the loop of job "a" on st, its recorder running until ctx
// ends, and the job's plan.
func recording(t *testing.T, ctx context.Context, st slotstore.Store) (*loop, *plan) {
	e := newEngine(t, job("a", nil))
	var runs sync.WaitGroup
	l := newLoop(e, st, context.Background(), &runs)
	l.startRecorder(ctx)
	return l, e.jobs().plans[0]
}
