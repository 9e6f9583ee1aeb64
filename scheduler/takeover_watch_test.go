package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// A holder that lost its lease watches the slot it lost: when its successor
// dies too, it takes the slot over once the successor's lease ends, not at
// its next scan of running slots a minute later.
func TestHolderThatLostItsLeaseWatchesTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 20 * time.Second}, "long")
		conf := `jobs: {long: {schedule: "@every 1h", lease: 3s, max_attempts: 5}}`
		toA, toB := &flaky{Store: st}, &flaky{Store: st}
		stopA := start(t, replica(t, toA, "a", conf, reg))
		synctest.Wait() // a has claimed the slot due now
		stopB := start(t, replica(t, toB, "b", conf, reg))

		time.Sleep(500 * time.Millisecond)
		toA.cut(true) // b takes the slot over when a's lease ends
		time.Sleep(5 * time.Second)
		toA.cut(false)
		time.Sleep(2 * time.Second)
		cut := time.Now()
		toB.cut(true) // and then b is cut off too
		time.Sleep(6 * time.Second)
		stopA()
		stopB()

		evs := rec.snapshot()
		if len(evs) != 3 {
			t.Fatalf("%d runs, want a's, b's takeover and a's takeover back: %+v", len(evs), evs)
		}
		back := evs[2]
		if back.run.Replica != "a" || back.run.Attempt != 3 || back.run.Fence <= evs[1].run.Fence {
			t.Fatalf("third run: replica %s attempt %d fence %d; want a, attempt 3, fence above %d",
				back.run.Replica, back.run.Attempt, back.run.Fence, evs[1].run.Fence)
		}
		// b's last renewal was sent before the cut: its lease ends within
		// a lease of it, and a claims at that moment.
		if late := back.started.Sub(cut); late > 3*time.Second+time.Second {
			t.Errorf("a took the slot back %v after b was cut off, want within lease + lease/3", late)
		}
	})
}

// A replica whose clock jumps ahead finds a slot missed and tries to record
// it; finding it claimed, it watches the slot like any replica whose claim
// lost, and takes it over when the holder dies. (Its clock two seconds
// behind at first, it has not claimed the slot, half a second ahead of it
// by its own clock, before the jump.)
func TestFastReplicaWatchesASlotItFoundClaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 20 * time.Second}, "long")
		conf := `jobs: {long: {schedule: "@every 10m", starting_deadline: 5s, lease: 3s, catch_up: none}}`
		cfg, err := Parse("test.yaml", []byte(conf))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Replica = "fast"
		var skew atomic.Int64
		skew.Store(int64(-2 * time.Second))
		fast, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()),
			WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		slot := time.Now().Truncate(10 * time.Minute).Add(10 * time.Minute)
		holder := &flaky{Store: st}
		stopFast := start(t, fast)
		stopA := start(t, replica(t, holder, "a", conf, reg))
		time.Sleep(time.Until(slot) + 500*time.Millisecond)
		skew.Store(int64(20 * time.Second)) // the slot is missed by this clock
		time.Sleep(600 * time.Millisecond)
		holder.cut(true) // a dies mid-run
		time.Sleep(10 * time.Second)
		stopA()
		stopFast()

		var evs []event
		for _, ev := range rec.snapshot() {
			if ev.run.Slot.Equal(slot) {
				evs = append(evs, ev)
			}
		}
		if len(evs) != 2 {
			t.Fatalf("%d runs of the slot, want a's and the fast replica's takeover: %+v", len(evs), evs)
		}
		if r := evs[1].run; r.Replica != "fast" || r.Attempt != 2 {
			t.Fatalf("second run: replica %s attempt %d, want fast, attempt 2", r.Replica, r.Attempt)
		}
		// The fast replica looks again when the slot's window closes by the
		// store's clock, after a's lease ended.
		if late := evs[1].started.Sub(slot); late > 5*time.Second+time.Second {
			t.Errorf("takeover %v after the slot, want by the end of its window", late)
		}
	})
}

// stuckTakeover holds the first takeover claim sent after arm until its
// context ends, as a store does whose slot row a frozen transaction holds,
// and records when each takeover claim was sent from then on.
type stuckTakeover struct {
	slotstore.Store
	mu    sync.Mutex
	armed bool
	held  bool
	sent  []time.Time
	sizes []int // requests per takeover claim
}

func (s *stuckTakeover) arm() {
	s.mu.Lock()
	s.armed = true
	s.mu.Unlock()
}

func (s *stuckTakeover) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	s.mu.Lock()
	hold := false
	if s.armed && len(p.Requests) > 0 && p.Requests[0].TakeoverOnly {
		s.sent = append(s.sent, time.Now())
		s.sizes = append(s.sizes, len(p.Requests))
		hold, s.held = !s.held, true
	}
	s.mu.Unlock()
	if hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Claim(ctx, p)
}

func (s *stuckTakeover) times() ([]time.Time, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent), slices.Clone(s.sizes)
}

// A takeover claim that timed out, most likely waiting on a slot's row (a
// job's frozen transaction holds it until the holder's lease ends), is sent
// again at once, not after the backoff a failing store gets, and each of
// its slots alone, so a row one of them waits on holds up no other.
func TestTimedOutTakeoverAsksAgainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 20 * time.Second}, "long", "long2")
		conf := `jobs: {long: {schedule: "@every 1h", lease: 3s}, long2: {schedule: "@every 1h", lease: 3s}}`
		toA, toB := &flaky{Store: st}, &stuckTakeover{Store: st}
		stopA := start(t, replica(t, toA, "a", conf, reg))
		synctest.Wait() // a has claimed the slot due now
		stopB := start(t, replica(t, toB, "b", conf, reg))
		time.Sleep(500 * time.Millisecond)
		toB.arm()
		toA.cut(true)
		time.Sleep(8 * time.Second)
		stopA()
		stopB()

		sent, sizes := toB.times()
		if len(sent) < 3 || sizes[0] != 2 {
			t.Fatalf("b sent takeover claims of %v slots after arming, want 2 together, then more", sizes)
		}
		// The held claim gave up after half the lease; its slots went again
		// at once, each alone.
		if gap := sent[1].Sub(sent[0]) - 1500*time.Millisecond; gap > 100*time.Millisecond {
			t.Errorf("b asked again %v after its takeover claim timed out, want at once", gap)
		}
		if sizes[1] != 1 || sizes[2] != 1 || sent[2].Sub(sent[1]) > 100*time.Millisecond {
			t.Errorf("after the timeout b sent claims of %v slots at %v, want each slot alone, at once", sizes[1:3], sent[1:3])
		}
		evs := rec.snapshot()
		if len(evs) != 4 || evs[2].run.Replica != "b" || evs[3].run.Replica != "b" {
			t.Fatalf("runs %+v, want a's two and b's two takeovers", evs)
		}
	})
}

// finishFails fails every Finish, and times out the first takeover claim
// after that: a store that answers nothing while the holder's lease runs
// out.
type finishFails struct {
	slotstore.Store
	mu       sync.Mutex
	finishes int
	timedOut bool
}

func (s *finishFails) Finish(ctx context.Context, p slotstore.FinishParams) error {
	s.mu.Lock()
	s.finishes++
	s.mu.Unlock()
	return errors.New("test: store unavailable")
}

func (s *finishFails) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	s.mu.Lock()
	timeOut := !s.timedOut && s.finishes > 0 && len(p.Requests) > 0 && p.Requests[0].TakeoverOnly
	s.timedOut = s.timedOut || timeOut
	s.mu.Unlock()
	if timeOut {
		return nil, fmt.Errorf("test: claim: %w", context.DeadlineExceeded)
	}
	return s.Store.Claim(ctx, p)
}

// A run whose outcome could not be recorded before its lease ran out has
// run: when the replica's next claim of the slot times out and the one after
// finds the slot still held by this process (the store's lease outlasts the
// holder's trust by its margin), the claim is not adopted as one whose reply
// was lost, which would run the job a second time.
func TestRunWhoseLeaseRanOutIsNotAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 100 * time.Millisecond}, "report")
		conf := `jobs: {report: {schedule: "@every 1h", lease: 3s, on_crash: skip}}`
		wrapped := &finishFails{Store: st}
		stop := start(t, replica(t, wrapped, "a", conf, reg))
		time.Sleep(10 * time.Second)
		stop()
		wrapped.mu.Lock()
		timedOut := wrapped.timedOut
		wrapped.mu.Unlock()
		if !timedOut {
			t.Fatal("no takeover claim was sent after the lease ran out")
		}
		if evs := rec.snapshot(); len(evs) != 1 {
			t.Fatalf("%d runs of the slot, want 1: %+v", len(evs), evs)
		}
	})
}
