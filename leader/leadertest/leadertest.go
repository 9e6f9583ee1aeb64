package leadertest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// Harness builds the electors of one backend for Run. Every elector it
// returns during one Run must share one store.
type Harness struct {
	// New returns an elector on the store under test that logs to
	// logger. It registers its own cleanup with t.
	New func(t *testing.T, logger *slog.Logger) leader.Elector
	// NewStallable returns an elector as New does, and a function that
	// stalls it: once called, every request the elector has sent or sends
	// to the store goes unanswered, as if the network dropped its packets
	// (testserver.Proxy.Blackhole between the elector and the store does
	// this). Requests of other electors are unaffected.
	NewStallable func(t *testing.T, logger *slog.Logger) (leader.Elector, func())
}

// Run checks that the electors h builds keep the leader contract. The
// subtests run in parallel.
func Run(t *testing.T, h Harness) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"OneLeader", testOneLeader},
		{"Renewal", testRenewal},
		{"StalledLeader", testStalledLeader},
		{"HandOver", testHandOver},
		{"Cooldown", testCooldown},
		{"CancelWhileFollowing", testCancelWhileFollowing},
		{"Invalid", testInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

var seq atomic.Int64

// nameFor returns a campaign name that no other test, run or process
// sharing the store uses.
func nameFor(t *testing.T) string {
	return fmt.Sprintf("%s#%d.%d.%d", t.Name(), os.Getpid(), time.Now().UnixNano(), seq.Add(1))
}

// campaign is one call of Lead running in a goroutine of the test.
type campaign struct {
	cancel context.CancelFunc
	done   chan error
}

// lead calls e.Lead(p, fn) in a goroutine and stops it when t ends.
func lead(t *testing.T, e leader.Elector, p leader.Params, fn func(context.Context, leader.Term)) *campaign {
	ctx, cancel := context.WithCancel(context.Background())
	c := &campaign{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- e.Lead(ctx, p, fn) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels the campaign and waits for Lead to return; it returns how
// long that took, and fails t if Lead returned an error or took over 10 s.
func (c *campaign) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	c.cancel()
	select {
	case err, ok := <-c.done:
		if ok && err != nil {
			t.Errorf("Lead returned %v, want nil after its context ended", err)
		}
		if ok {
			close(c.done)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lead did not return within 10s of its context ending")
	}
	return time.Since(start)
}

// hold is a fn that keeps its term until its context ends or release is
// closed, and reports its terms on terms.
func hold(terms chan<- leader.Term, release <-chan struct{}) func(context.Context, leader.Term) {
	return func(ctx context.Context, t leader.Term) {
		terms <- t
		select {
		case <-ctx.Done():
		case <-release:
		}
	}
}

// awaitTerm receives a term from terms or fails t after timeout.
func awaitTerm(t *testing.T, terms <-chan leader.Term, timeout time.Duration) leader.Term {
	t.Helper()
	select {
	case term := <-terms:
		return term
	case <-time.After(timeout):
		t.Fatalf("no term began within %v", timeout)
	}
	return leader.Term{}
}

// noTerm fails t if a term arrives on terms.
func noTerm(t *testing.T, terms <-chan leader.Term, who string) {
	t.Helper()
	select {
	case term := <-terms:
		t.Fatalf("%s began a term (fence %d) while another replica led", who, term.Fence)
	default:
	}
}
