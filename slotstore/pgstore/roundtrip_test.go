package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// counter is a pgx tracer counting the statements a pool sends and the
// statements it prepares: each is one round trip to the server.
type counter struct{ queries, prepares atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *counter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}
func (c *counter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (c *counter) reset()                   { c.queries.Store(0); c.prepares.Store(0) }
func (c *counter) roundTrips() (q, p int64) { return c.queries.Load(), c.prepares.Load() }

// tracedStore opens a store on a one-connection pool traced by c.
func tracedStore(t testing.TB, c *counter) *pgstore.Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testserver.SharedPostgres(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := pgstore.New(context.Background(), pool, pgstore.Options{Schema: freshSchema()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// batchOf returns n requests for consecutive seconds from the start'th.
func batchOf(job string, start, n int) []slotstore.ClaimRequest {
	base := nextHour()
	reqs := make([]slotstore.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = slotstore.ClaimRequest{Job: job, Slot: base.Add(time.Duration(start+i) * time.Second), Lease: time.Minute}
	}
	return reqs
}

// TestRoundTripsPerSlot: a batch of 1,000 claims is one statement, one
// round trip (two on a connection's first use of the statement, which pgx
// prepares), whether the claims win or find the slots held; every fenced
// mutation, and an enrollment, is one statement.
func TestRoundTripsPerSlot(t *testing.T) {
	t.Parallel()
	c := &counter{}
	s := tracedStore(t, c)
	const n = 1000
	reqs := batchOf("rt", 0, n)
	for _, replica := range []string{"r1", "r2", "r2"} { // wins, then held twice
		c.reset()
		res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: reqs})
		if err != nil {
			t.Fatal(err)
		}
		q, p := c.roundTrips()
		t.Logf("claim of %d slots by %s (%v): %d statement(s), %d prepare(s): %.4f round trips per slot",
			n, replica, res[0].Status, q, p, float64(q+p)/n)
		if q != 1 || p > 1 {
			t.Errorf("claim of %d slots: %d statements and %d prepares, want 1 and at most 1", n, q, p)
		}
	}
	won, _ := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r3", Requests: batchOf("rt2", 0, 1)})
	ref := won[0].Claim.Ref
	for name, op := range map[string]func() error{
		"renew": func() error { return s.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}) },
		"finish": func() error {
			return s.Finish(t.Context(), slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded})
		},
		"release": func() error { return s.Release(t.Context(), ref) }, // lease lost by now: still one statement
		"enroll": func() error {
			_, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"rt", "rt2", "rt3"}})
			return err
		},
	} {
		c.reset()
		op()
		if q, _ := c.roundTrips(); q != 1 {
			t.Errorf("%s: %d statements, want 1", name, q)
		}
	}
}

// BenchmarkClaimBatch1000 claims batches of 1,000 new slots (won) and
// batches of 1,000 slots another replica holds (held), on one connection
// of the shared private server, and reports claims per second.
func BenchmarkClaimBatch1000(b *testing.B) {
	const n = 1000
	for _, held := range []bool{false, true} {
		name := map[bool]string{false: "won", true: "held"}[held]
		b.Run(name, func(b *testing.B) {
			c := &counter{}
			s := tracedStore(b, c)
			ctx := context.Background()
			warm := batchOf("bench", 0, n)
			if _, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: warm}); err != nil {
				b.Fatal(err)
			}
			c.reset()
			for i := 0; b.Loop(); i++ {
				reqs := warm
				if !held {
					reqs = batchOf("bench", (i+1)*n, n)
				}
				res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: reqs})
				if err != nil {
					b.Fatal(err)
				}
				if want := map[bool]slotstore.Status{false: slotstore.Won, true: slotstore.Held}[held]; res[n-1].Status != want {
					b.Fatalf("status %v, want %v", res[n-1].Status, want)
				}
			}
			q, p := c.roundTrips()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "claims/s")
			b.ReportMetric(float64(q+p)/float64(n*b.N), "roundtrips/slot")
		})
	}
}
