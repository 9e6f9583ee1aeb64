package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var errGone = errors.New("gone")

// fakeStore renews until told to fail, recording when.
type fakeStore struct {
	mu   sync.Mutex
	fail error // returned by Renew when set
	n    int
}

func (f *fakeStore) renew(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return f.fail
}

func (f *fakeStore) set(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

type lostCall struct {
	at      time.Time
	expired bool
	err     error
}

func start(f *fakeStore, lease time.Duration, lost chan<- lostCall, renewUntil time.Time) *Keeper {
	return Start(time.Now(), Config{Lease: lease, RenewUntil: renewUntil}, funcs{
		renew:  f.renew,
		gone:   func(err error) bool { return errors.Is(err, errGone) },
		onLost: func(expired bool, err error) { lost <- lostCall{time.Now(), expired, err} },
	})
}

// Renewals keep the lease; when they fail, trust ends at the last successful
// renewal's send time + lease − margin, exactly.
func TestTrustEndsAtLastRenewalPlusLeaseMinusMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{}
		lost := make(chan lostCall, 1)
		k := start(f, 3*time.Second, lost, time.Time{})
		defer k.Stop()
		t0 := time.Now()
		time.Sleep(10500 * time.Millisecond)
		if !k.Trusted() {
			t.Fatal("a renewed lease is not trusted")
		}
		lastOK := t0.Add(10 * time.Second) // renewals every 1 s; the last sent at 10 s
		f.set(errors.New("store down"))
		got := <-lost
		want := lastOK.Add(3*time.Second - DefaultMargin(3*time.Second))
		if !got.expired || !got.at.Equal(want) {
			t.Errorf("lost at %v (expired %v), want %v", got.at, got.expired, want)
		}
		if k.Trusted() {
			t.Error("still trusted after the loss")
		}
	})
}

// A renewal that says the lease is gone ends trust at once.
func TestGoneEndsTrustAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{fail: errGone}
		lost := make(chan lostCall, 1)
		k := start(f, 3*time.Second, lost, time.Time{})
		defer k.Stop()
		got := <-lost
		if got.expired || !errors.Is(got.err, errGone) || got.at.Sub(time.Unix(946684800, 0)) != time.Second {
			t.Errorf("lost %+v, want gone at the first renewal (1 s)", got)
		}
	})
}

// Renewals stop at RenewUntil; the lease then runs out.
func TestRenewUntilLetsTheLeaseRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{}
		lost := make(chan lostCall, 1)
		t0 := time.Now()
		k := start(f, 3*time.Second, lost, t0.Add(5*time.Second))
		defer k.Stop()
		got := <-lost
		// Renewals at 1, 2, 3, 4 s; the one due at 5 s is not sent.
		if want := t0.Add(4*time.Second + 3*time.Second - DefaultMargin(3*time.Second)); !got.expired || !got.at.Equal(want) {
			t.Errorf("lost at %v, want %v", got.at, want)
		}
	})
}

// Pause stops renewals but not the trust window; Stop silences OnLost.
func TestPauseAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{}
		lost := make(chan lostCall, 1)
		k := start(f, 3*time.Second, lost, time.Time{})
		time.Sleep(1500 * time.Millisecond)
		k.Pause()
		got := <-lost // trust ends 2.7 s after the renewal sent at 1 s
		if got.at.Sub(time.Unix(946684800, 0)) != 3700*time.Millisecond {
			t.Errorf("lost at %v after pause", got.at)
		}
		k.Stop()

		k2 := start(f, 3*time.Second, lost, time.Time{})
		k2.Stop()
		time.Sleep(10 * time.Second)
		select {
		case c := <-lost:
			t.Errorf("OnLost after Stop: %+v", c)
		default:
		}
	})
}

var errEnded = errors.New("ended")

// A renewal that finds the work recorded as ended stops renewing and never
// reports the lease lost, even after the trust window.
func TestEndedIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{}
		lost := make(chan lostCall, 1)
		k := Start(time.Now(), Config{Lease: 3 * time.Second}, funcs{
			renew:  f.renew,
			gone:   func(err error) bool { return errors.Is(err, errGone) },
			ended:  func(err error) bool { return errors.Is(err, errEnded) },
			onLost: func(expired bool, err error) { lost <- lostCall{time.Now(), expired, err} },
		})
		defer k.Stop()
		time.Sleep(1500 * time.Millisecond) // one renewal
		f.set(errEnded)
		time.Sleep(10 * time.Second)
		select {
		case c := <-lost:
			t.Fatalf("lease reported lost (expired %v, err %v) after the work ended", c.expired, c.err)
		default:
		}
		if !k.Ended() {
			t.Fatal("Ended() is false after a renewal found the work ended")
		}
		select {
		case <-k.Lost():
			t.Fatal("Lost() closed after the work ended")
		default:
		}
		f.mu.Lock()
		n := f.n
		f.mu.Unlock()
		if n != 2 {
			t.Errorf("%d renewals, want 2: none after the one that found the work ended", n)
		}
	})
}

// funcs is a Holder of functions; nil ones do nothing.
type funcs struct {
	renew       func(context.Context) error
	gone, ended func(error) bool
	onLost      func(expired bool, err error)
}

func (f funcs) Renew(ctx context.Context) error { return f.renew(ctx) }
func (f funcs) Gone(err error) bool             { return f.gone(err) }
func (f funcs) Ended(err error) bool            { return f.ended != nil && f.ended(err) }
func (f funcs) Lost(expired bool, err error)    { f.onLost(expired, err) }
func (funcs) Renewed(time.Time, time.Duration)  {}
func (funcs) RenewFailed(error, time.Duration)  {}

// Holder.Lost is not running after Stop returns: a Stop that comes while
// the trust window's end is calling it (a slow log write, here) waits for
// it, so a holder that recorded its outcome and stopped the keeper never
// hears of a lost lease afterwards.
func TestLostNotRunningAfterStop(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			var stopped, late atomic.Bool
			k := Start(time.Now(), Config{Lease: 3 * time.Second}, funcs{
				renew: func(context.Context) error { return errors.New("down") },
				gone:  func(error) bool { return false },
				onLost: func(bool, error) {
					time.Sleep(time.Millisecond)
					late.Store(stopped.Load())
				},
			})
			k.Pause()                           // renewals over, as a run's end does
			time.Sleep(2700 * time.Millisecond) // the trust window's end
			k.Stop()
			stopped.Store(true)
			time.Sleep(time.Second)
			if late.Load() {
				t.Fatal("Holder.Lost was still running after Stop returned")
			}
		})
	}
}
