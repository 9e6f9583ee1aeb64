package redisleader_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/redisleader"
)

// A Redis without persistence restarts empty: the leader's next renewal
// finds no lease and its term ends at once; its next term's fence is still
// above the old one, thanks to the clock floor.
func TestRestartKeepsFencesGrowing(t *testing.T) {
	srv := testserver.StartRedis(t)
	e := redisleader.New(client(t, srv.Addr()), redisleader.Options{Logger: slog.New(slog.DiscardHandler)})
	type ended struct {
		term  leader.Term
		cause error
	}
	terms, ends := make(chan leader.Term, 4), make(chan ended, 4)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		done <- e.Lead(ctx, leader.Params{Name: "fanout", Replica: "A", Lease: 300 * time.Millisecond},
			func(ctx context.Context, term leader.Term) {
				terms <- term
				<-ctx.Done()
				ends <- ended{term, context.Cause(ctx)}
			})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Lead: %v", err)
		}
	}()
	first := <-terms
	srv.Restart(t)
	select {
	case end := <-ends:
		if !errors.Is(end.cause, leader.ErrLeaseLost) {
			t.Errorf("the term ended with %v, want ErrLeaseLost", end.cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the term outlived the store's data by 5s")
	}
	select {
	case next := <-terms:
		if next.Fence <= first.Fence {
			t.Errorf("fence after the restart %d, not above %d", next.Fence, first.Fence)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no new term within 5s of the restart")
	}
}
