package lease

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Bound ends at its deadline whether Done was asked for before it, after
// it, or never, and Err agrees with Done throughout.
func TestBoundEndsAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		until := time.Now().Add(time.Second)
		waited, never, late := NewBound(until), NewBound(until), NewBound(until)
		if d, ok := waited.Deadline(); !ok || !d.Equal(until) {
			t.Fatalf("Deadline() = %v, %v; want %v, true", d, ok, until)
		}
		done := waited.Done()
		time.Sleep(999 * time.Millisecond)
		for _, b := range []*Bound{waited, never, late} {
			if err := b.Err(); err != nil {
				t.Fatalf("Err() before the deadline = %v", err)
			}
		}
		if isClosed(done) {
			t.Fatal("Done closed before the deadline")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !isClosed(done) || waited.Err() != context.DeadlineExceeded {
			t.Fatalf("at the deadline: Done closed %v, Err %v", isClosed(done), waited.Err())
		}
		if err := never.Err(); err != context.DeadlineExceeded {
			t.Fatalf("Err() of a Bound never waited on = %v", err)
		}
		if !isClosed(late.Done()) || late.Err() != context.DeadlineExceeded {
			t.Fatalf("Done asked for after the deadline: closed %v, Err %v", isClosed(late.Done()), late.Err())
		}
		for _, b := range []*Bound{waited, never, late} {
			b.Stop()
			if err := b.Err(); err != context.DeadlineExceeded {
				t.Fatalf("Stop after the deadline changed Err to %v", err)
			}
		}
	})
}

// Stop ends a Bound as a deadline context's cancel does: Done closes, Err
// is context.Canceled, and the timer Done started no longer fires.
func TestBoundStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		waited, never := NewBound(time.Now().Add(time.Minute)), NewBound(time.Now().Add(time.Minute))
		done := waited.Done()
		waited.Stop()
		never.Stop()
		if !isClosed(done) || waited.Err() != context.Canceled {
			t.Fatalf("after Stop: Done closed %v, Err %v", isClosed(done), waited.Err())
		}
		if !isClosed(never.Done()) || never.Err() != context.Canceled {
			t.Fatalf("Done asked for after Stop: closed %v, Err %v", isClosed(never.Done()), never.Err())
		}
		time.Sleep(2 * time.Minute)
		if waited.Err() != context.Canceled {
			t.Fatalf("Err() after the deadline of a stopped Bound = %v", waited.Err())
		}
	})
}

// A context derived from a Bound ends with it.
func TestBoundParentsAContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBound(time.Now().Add(time.Second))
		defer b.Stop()
		ctx, cancel := context.WithCancel(b)
		defer cancel()
		<-ctx.Done()
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatalf("child's Err() = %v", ctx.Err())
		}
	})
}
