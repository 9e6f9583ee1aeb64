package etcdleader_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// sessions opens driver sessions for name on the shared cluster, each with
// a client of its own, under one fresh prefix.
type sessions struct {
	t      *testing.T
	prefix string
	name   string
}

func newSessions(t *testing.T) *sessions {
	cluster(t)
	return &sessions{t: t, prefix: newPrefix(), name: "fanout"}
}

func (ss *sessions) open(holder string) (driver.Session, *clientv3.Client) {
	t := ss.t
	t.Helper()
	c := newClient(t, cluster(t).Endpoints()...)
	d, err := etcdleader.NewDriver(c, etcdleader.Options{Prefix: ss.prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(t.Context(), ss.name, holder)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c
}

// until reads the lease end the term key holds.
func (ss *sessions) until(c *clientv3.Client) time.Time {
	t := ss.t
	t.Helper()
	resp, err := c.Get(t.Context(), ss.prefix+"leader/"+ss.name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read the term key: %v, %d keys", err, len(resp.Kvs))
	}
	v, _, _ := strings.Cut(string(resp.Kvs[0].Value), " ")
	u, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("term key %q: %v", resp.Kvs[0].Value, err)
	}
	return u
}

// win calls s.Acquire and returns the fence it won, or fails t.
func win(t *testing.T, s driver.Session, lease time.Duration) int64 {
	t.Helper()
	a, err := s.Acquire(t.Context(), lease)
	if err != nil || !a.Won {
		t.Fatalf("Acquire: %+v, %v; want a win", a, err)
	}
	return a.Fence
}

// An Acquire retried by the same holder (its first reply lost) wins a new
// term with a higher fence, and the first term is gone; another holder is
// told how long the lease has left.
func TestRetriedAcquire(t *testing.T) {
	ss := newSessions(t)
	a, _ := ss.open("A#1")
	ctx := t.Context()
	f1 := win(t, a, 5*time.Second)
	f2 := win(t, a, 5*time.Second)
	if f2 <= f1 {
		t.Errorf("the retried Acquire's fence %d is not above %d", f2, f1)
	}
	if err := a.Renew(ctx, f1, 5*time.Second); !errors.Is(err, leader.ErrLeaseLost) {
		t.Errorf("Renew of the first term: %v, want ErrLeaseLost", err)
	}
	if err := a.Renew(ctx, f2, 5*time.Second); err != nil {
		t.Errorf("Renew of the second term: %v", err)
	}
	b, _ := ss.open("B#1")
	att, err := b.Acquire(ctx, 5*time.Second)
	// Up to the lease and the clock skew a follower allows.
	if limit := 5*time.Second + etcdleader.DefaultClockSkew; err != nil || att.Won || att.Remaining <= 0 || att.Remaining > limit {
		t.Errorf("B's Acquire: %+v, %v; want held, with up to %v left", att, err, limit)
	}
}

// A renewal never moves the lease end back, so an attempt that reaches etcd
// after a later one cannot shorten the lease the later one granted.
func TestRenewNeverShortens(t *testing.T) {
	ss := newSessions(t)
	a, c := ss.open("A#1")
	ctx := t.Context()
	f := win(t, a, 5*time.Second)
	if err := a.Renew(ctx, f, 10*time.Second); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	long := ss.until(c)
	if err := a.Renew(ctx, f, time.Second); err != nil {
		t.Fatalf("Renew with a shorter lease: %v, want nil (the term is held)", err)
	}
	if got := ss.until(c); !got.Equal(long) {
		t.Errorf("the lease end moved from %v to %v", long, got)
	}
}

// A release between a follower's Acquire and its Wait wakes the Wait at
// once, and the follower then wins with a higher fence.
func TestWaitSeesEarlierRelease(t *testing.T) {
	ss := newSessions(t)
	a, _ := ss.open("A#1")
	b, _ := ss.open("B#1")
	ctx := t.Context()
	fa := win(t, a, 30*time.Second)
	if att, err := b.Acquire(ctx, 30*time.Second); err != nil || att.Won {
		t.Fatalf("B's Acquire: %+v, %v; want held", att, err)
	}
	if err := a.Release(ctx, fa); err != nil {
		t.Fatalf("Release: %v", err)
	}
	start := time.Now()
	if err := b.Wait(ctx, 20*time.Second); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("Wait returned after %v: the release before it did not wake it", waited)
	}
	if fb := win(t, b, 30*time.Second); fb <= fa {
		t.Errorf("B's fence %d is not above A's %d", fb, fa)
	}
}

// Renewals do not wake a waiting follower: only a deletion of the term
// does, or the end of the wait.
func TestWaitIgnoresRenewals(t *testing.T) {
	ss := newSessions(t)
	a, _ := ss.open("A#1")
	b, _ := ss.open("B#1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fa := win(t, a, 5*time.Second)
	if att, err := b.Acquire(ctx, 5*time.Second); err != nil || att.Won {
		t.Fatalf("B's Acquire: %+v, %v; want held", att, err)
	}
	renewals := make(chan int)
	go func() {
		n := 0
		defer func() { renewals <- n }()
		for ctx.Err() == nil {
			if a.Renew(ctx, fa, 5*time.Second) == nil {
				n++
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	const d = 700 * time.Millisecond
	start := time.Now()
	if err := b.Wait(ctx, d); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	waited := time.Since(start)
	cancel()
	n := <-renewals
	if n == 0 {
		t.Fatal("no renewal succeeded during the wait")
	}
	if waited < d {
		t.Errorf("Wait returned after %v, before its %v, during %d renewals", waited, d, n)
	}
}

// Release under a fence that no longer holds the lease changes nothing.
func TestStaleRelease(t *testing.T) {
	ss := newSessions(t)
	a, _ := ss.open("A#1")
	b, _ := ss.open("B#1")
	ctx := t.Context()
	fa := win(t, a, 50*time.Millisecond)
	time.Sleep(50*time.Millisecond + 2*etcdleader.DefaultClockSkew) // A's lease ends, and the skew allowed passes
	fb := win(t, b, 30*time.Second)
	if fb <= fa {
		t.Errorf("B's fence %d is not above A's %d", fb, fa)
	}
	if err := a.Release(ctx, fa); err != nil {
		t.Fatalf("A's stale Release: %v", err)
	}
	if err := a.Renew(ctx, fa, time.Second); !errors.Is(err, leader.ErrLeaseLost) {
		t.Errorf("A's stale Renew: %v, want ErrLeaseLost", err)
	}
	if err := b.Renew(ctx, fb, 30*time.Second); err != nil {
		t.Errorf("B's Renew after A's stale Release: %v", err)
	}
}
