package lease

import (
	"context"
	"sync"
	"time"
)

// Bound is the context of one store call made under a lease's trust: its
// deadline is the end of the trust window, and it carries no values.
// Unlike context.WithDeadline's, it starts no timer unless the call asks
// for Done: a store that never waits on its context (memstore, or one
// that reads only the deadline) costs one allocation a call, not four and
// a timer. Call Stop once the call has returned: it ends the context, as
// a deadline context's cancel function does.
type Bound struct {
	until time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done call
	timer *time.Timer   // closes done at until; nil until Done is asked for
	err   error         // why it ended; nil while it has not
}

// NewBound returns a context that ends at until.
func NewBound(until time.Time) *Bound { return &Bound{until: until} }

var _ context.Context = (*Bound)(nil)

func (b *Bound) Deadline() (time.Time, bool) { return b.until, true }

func (b *Bound) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		switch wait := time.Until(b.until); {
		case b.err != nil:
			close(b.done)
		case wait > 0:
			b.timer = time.AfterFunc(wait, b.expire)
		default:
			b.endLocked(context.DeadlineExceeded)
		}
	}
	return b.done
}

// Err is context.Canceled after Stop, context.DeadlineExceeded once until
// has passed, and nil before: with Done asked for, once Done is closed (as
// context.WithDeadline's); without, by the clock, and a Done asked for
// after that is closed already.
func (b *Bound) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil && b.done == nil && time.Until(b.until) <= 0 {
		b.err = context.DeadlineExceeded
	}
	return b.err
}

func (*Bound) Value(any) any { return nil }

// Stop ends the context, if it has not ended, with context.Canceled, and
// releases the timer Done started, if any.
func (b *Bound) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.endLocked(context.Canceled)
}

func (b *Bound) String() string { return "lease.Bound(" + b.until.String() + ")" }

func (b *Bound) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endLocked(context.DeadlineExceeded)
}

// endLocked ends the context with err unless it has ended; Done, when
// asked for later, is made closed.
func (b *Bound) endLocked(err error) {
	if b.err != nil {
		return
	}
	b.err = err
	if b.done != nil {
		close(b.done)
	}
}
