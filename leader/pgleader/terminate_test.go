package pgleader_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
)

// A leader whose network went silent keeps its server-side session, and the
// session keeps the advisory lock, for as long as TCP takes to notice
// (minutes). The follower does not wait for that: once the lease has ended
// it terminates the session and takes over within milliseconds, here
// bounded generously by a few seconds beyond the lease.
func TestTerminatesStalledSession(t *testing.T) {
	const lease = 500 * time.Millisecond
	pg := testserver.SharedPostgres(t)
	schema := freshSchema()
	proxy := testserver.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port()))
	quiet := slog.New(slog.DiscardHandler)
	a := elector(t, viaProxy(pg.DSN(), pg.Port(), proxy.Addr()), schema, quiet)
	b := elector(t, pg.DSN(), schema, quiet)

	ctx, cancel := context.WithCancel(t.Context())
	aTerms, bTerms, done := make(chan leader.Term, 1), make(chan leader.Term, 1), make(chan error, 2)
	hold := func(terms chan<- leader.Term) func(context.Context, leader.Term) {
		return func(ctx context.Context, term leader.Term) {
			select {
			case terms <- term:
			default:
			}
			<-ctx.Done()
		}
	}
	go func() { done <- a.Lead(ctx, leader.Params{Name: "fanout", Replica: "A", Lease: lease}, hold(aTerms)) }()
	aTerm := <-aTerms
	go func() { done <- b.Lead(ctx, leader.Params{Name: "fanout", Replica: "B", Lease: lease}, hold(bTerms)) }()
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("Lead: %v", err)
			}
		}
	}()

	conn, err := pgx.Connect(t.Context(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var pid int
	if err := conn.QueryRow(t.Context(), "SELECT pid FROM "+schema+".leaders WHERE name = 'fanout'").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	stalled := time.Now()
	proxy.Blackhole()
	var bTerm leader.Term
	select {
	case bTerm = <-bTerms:
	case <-time.After(lease + 5*time.Second):
		t.Fatal("B did not take over within 5s of the lease's end")
	}
	d := time.Since(stalled)
	t.Logf("B took over %v after the stall (lease %v)", d.Round(time.Millisecond), lease)
	if d > lease+3*time.Second {
		t.Errorf("B took over %v after the stall; the lease is %v", d, lease)
	}
	if bTerm.Fence <= aTerm.Fence {
		t.Errorf("B's fence %d is not above A's %d", bTerm.Fence, aTerm.Fence)
	}
	var alive bool
	if err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil {
		t.Fatal(err)
	}
	if alive {
		t.Errorf("A's session (pid %d) is still alive after B took over", pid)
	}
}
