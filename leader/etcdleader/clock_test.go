package etcdleader_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// Lease ends are written and judged by Options.Clock: a follower given a
// clock a minute ahead of the leader's sees the leader's 30 s term as long
// over and takes it at once, which is why every elector of a name must be
// given one clock (the scheduler gives the etcd store's, the members'
// time). With the leader's clock it waits.
func TestElectorsJudgeByTheirClock(t *testing.T) {
	c := newClient(t, cluster(t).Endpoints()...)
	prefix := newPrefix()
	ahead := func() time.Time { return time.Now().Add(time.Minute) }
	elector := func(clock func() time.Time) leader.Elector {
		e, err := etcdleader.New(c, etcdleader.Options{Prefix: prefix, Clock: clock, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx, cancel := context.WithCancel(t.Context())
	p := leader.Params{Name: "clock", Replica: "a", Lease: 30 * time.Second}
	led, done := make(chan int64, 1), make(chan struct{})
	go func() {
		defer close(done)
		elector(nil).Lead(ctx, p, func(ctx context.Context, term leader.Term) {
			led <- term.Fence
			<-ctx.Done()
		})
	}()
	defer func() { cancel(); <-done }()
	first := <-led

	for _, tc := range []struct {
		name  string
		clock func() time.Time
		wins  bool
	}{{"the same clock", nil, false}, {"a clock a minute ahead", ahead, true}} {
		won := make(chan int64, 1)
		fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
		p := p
		p.Replica = "b"
		elector(tc.clock).Lead(fctx, p, func(ctx context.Context, term leader.Term) {
			won <- term.Fence
			fcancel()
		})
		fcancel()
		select {
		case f := <-won:
			if !tc.wins {
				t.Errorf("with %s the follower took a live term (fence %d after %d)", tc.name, f, first)
			}
		default:
			if tc.wins {
				t.Errorf("with %s the follower did not take the term", tc.name)
			}
		}
	}
}

// A term's fence is Options.FenceBase plus the revision that created its
// key, and Renew and Release find the term by it.
func TestFenceBase(t *testing.T) {
	c := newClient(t, cluster(t).Endpoints()...)
	const base = int64(1) << 50
	var logs testlog.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := etcdleader.New(c, etcdleader.Options{Prefix: newPrefix(), FenceBase: base, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var fences []int64
	for range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		p := leader.Params{Name: "base", Replica: "a", Lease: time.Second, Cooldown: time.Millisecond}
		err := e.Lead(ctx, p, func(ctx context.Context, term leader.Term) {
			fences = append(fences, term.Fence)
			poll.Until(t, 10*time.Second, fmt.Sprintf("a renewal by fence %d", term.Fence), func() error {
				for _, r := range logs.Logged(t, "lease renewed") {
					if r["fence"] == float64(term.Fence) {
						return nil
					}
				}
				return errors.New("none logged")
			})
			cancel() // released by its fence on the way out
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(fences) != 2 || fences[0] <= base || fences[1] <= fences[0] {
		t.Errorf("fences %v, want above %d and growing", fences, base)
	}
	if _, err := etcdleader.New(c, etcdleader.Options{FenceBase: -1}); err == nil {
		t.Error("a negative FenceBase was accepted")
	}
}
