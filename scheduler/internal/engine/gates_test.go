package engine

import (
	"testing"
	"testing/synctest"
	"time"
)

// The runs of one instant share its gate; another instant has its own; a
// loop without an opener has none.
func TestGatesOfAnInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gs gateSet
		gs.init()
		at := time.Now().Add(time.Second)
		if gs.of(at) != nil {
			t.Fatal("a gate with no opener running")
		}
		gs.opening = true
		a, b, c := gs.of(at), gs.of(at), gs.of(at.Add(time.Millisecond))
		if a == nil || a != b {
			t.Error("two runs of one instant do not share its gate")
		}
		if c == a {
			t.Error("a run of another instant shares the gate")
		}
		if n := len(gs.in); n != 2 {
			t.Errorf("%d gates handed to the opener, want 2", n)
		}
	})
}

// The opener opens each gate at its time, never before, and returns once
// its input is closed and every gate is open; or at once when stopped.
func TestOpenGates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		in := make(chan gate, 4)
		late, soon := gate{at: start.Add(2 * time.Second), open: make(chan struct{})},
			gate{at: start.Add(time.Second), open: make(chan struct{})}
		in <- late
		in <- soon
		close(in)
		done := make(chan struct{})
		go func() { openGates(in, nil); close(done) }()
		<-soon.open
		if got := time.Since(start); got != time.Second {
			t.Errorf("the first gate opened after %v, want 1s", got)
		}
		<-late.open
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("the second gate opened after %v, want 2s", got)
		}
		<-done

		in, stop := make(chan gate, 1), make(chan struct{})
		in <- gate{at: time.Now().Add(time.Hour), open: make(chan struct{})}
		done = make(chan struct{})
		go func() { openGates(in, stop); close(done) }()
		time.Sleep(time.Second)
		close(stop)
		<-done
	})
}
