package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// BenchmarkArbitrate3Replicas: three replicas, each a store with its own
// connection, claim the same batch of 1,000 fresh slots at once, so one
// claim of each slot wins and two lose; a batch is spread over many jobs.
// Each iteration then has three clients insert the same 1,000 rows into a
// table shaped like the markers table (LIKE ... INCLUDING ALL: the same
// columns and indexes) with a batched INSERT ... ON CONFLICT DO NOTHING,
// the least a database can do to arbitrate. It reports slots decided per
// second, the baseline's rows per second, and their ratio.
//
// The slots lie ahead of the store's clock with a NotBefore behind it:
// a claim then takes the same path as the claim of a slot that has just
// come due, without the benchmark waiting for slots to come due. With
// deadline=true each claim's context has a deadline, as the engine's
// have, so the claim also bounds its lock waits (Store.run).
//
//	go test -run '^$' -bench Arbitrate3Replicas -benchtime 40x ./slotstore/pgstore/
func BenchmarkArbitrate3Replicas(b *testing.B) {
	for _, perJob := range []int{1, 10} {
		for _, deadline := range []bool{false, true} {
			b.Run(fmt.Sprintf("jobs=%d/deadline=%v", 1000/perJob, deadline), func(b *testing.B) {
				arbitrate(b, 1000/perJob, perJob, deadline)
			})
		}
	}
}

func arbitrate(b *testing.B, jobs, perJob int, deadline bool) {
	const replicas, n = 3, 1000
	ctx := context.Background()
	dsn := testserver.SharedPostgres(b).DSN()
	schema := freshSchema()
	stores := make([]*pgstore.Store, replicas)
	for i := range stores {
		s, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: schema, PoolSize: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	names := make([]string, jobs)
	for j := range names {
		names[j] = fmt.Sprintf("job-%04d", j)
	}
	if _, err := stores[0].Enroll(ctx, slotstore.EnrollParams{Jobs: names}); err != nil {
		b.Fatal(err)
	}
	pool := newPool(b, dsn)
	table := pgx.Identifier{schema, "baseline"}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+table+" (LIKE "+pgx.Identifier{schema, "markers"}.Sanitize()+" INCLUDING ALL)"); err != nil {
		b.Fatal(err)
	}
	insert := `INSERT INTO ` + table + ` (job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until, incarnation)
		SELECT u.job, u.slot, 'running', $1, (extract(epoch FROM c.t) * 1000000)::bigint + u.ord, 1, c.t,
			c.t + interval '1 minute', u.slot + interval '7 days', 'i'
		FROM unnest($2::text[], $3::timestamptz[]) WITH ORDINALITY AS u(job, slot, ord), (SELECT clock_timestamp() AS t) c
		ON CONFLICT DO NOTHING`
	conns := make([]*pgx.Conn, replicas)
	for i := range conns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(ctx)
		conns[i] = c
	}

	notBefore := time.Now().UTC().Truncate(time.Second)
	base := nextHour()
	var claimTime, insertTime time.Duration
	for it := 0; b.Loop(); it++ {
		reqs := make([]slotstore.ClaimRequest, 0, n)
		jobCol, slotCol := make([]string, 0, n), make([]time.Time, 0, n)
		for k := range perJob {
			at := base.Add(time.Duration(it*perJob+k) * time.Second)
			for _, job := range names {
				reqs = append(reqs, slotstore.ClaimRequest{Job: job, Slot: at, Lease: time.Minute, NotBefore: notBefore})
				jobCol, slotCol = append(jobCol, job), append(slotCol, at)
			}
		}

		won := make([]int, replicas)
		claimTime += together(b, replicas, func(r int) error {
			ctx := ctx
			if deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			res, err := stores[r].Claim(ctx, slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", r), Incarnation: "i", Requests: reqs})
			for _, c := range res {
				if c.Status == slotstore.Won {
					won[r]++
				} else if c.Status != slotstore.Held {
					return fmt.Errorf("claim of %s@%v: %v", c.Marker.Job, c.Marker.Slot, c.Status)
				}
			}
			return err
		})
		if total := won[0] + won[1] + won[2]; total != n {
			b.Fatalf("iteration %d: %d slots won (%v), want %d", it, total, won, n)
		}
		insertTime += together(b, replicas, func(r int) error {
			_, err := conns[r].Exec(ctx, insert, fmt.Sprintf("r%d", r), jobCol, slotCol)
			return err
		})
	}
	slots := float64(n * b.N)
	decided, baseline := slots/claimTime.Seconds(), slots/insertTime.Seconds()
	b.ReportMetric(decided, "slots/s")
	b.ReportMetric(baseline, "baseline-rows/s")
	b.ReportMetric(decided/baseline, "ratio")
}

// together runs f for every replica at once and returns how long it took
// them all.
func together(b *testing.B, replicas int, f func(r int) error) time.Duration {
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	start := make(chan struct{})
	for r := range replicas {
		wg.Go(func() {
			<-start
			errs[r] = f(r)
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	d := time.Since(t0)
	for r, err := range errs {
		if err != nil {
			b.Fatalf("replica %d: %v", r, err)
		}
	}
	return d
}

// BenchmarkClaimOne: one store claims one fresh slot a call, with and
// without a deadline on the call's context: the cost of a claim's round
// trip, and of bounding its lock waits (Store.run), where no batch
// amortizes it.
//
//	go test -run '^$' -bench ClaimOne -benchtime 2000x ./slotstore/pgstore/
func BenchmarkClaimOne(b *testing.B) {
	for _, deadline := range []bool{false, true} {
		b.Run(fmt.Sprintf("deadline=%v", deadline), func(b *testing.B) {
			ctx := context.Background()
			s, err := pgstore.Open(ctx, pgstore.Options{DSN: testserver.SharedPostgres(b).DSN(), Schema: freshSchema(), PoolSize: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			notBefore := time.Now().UTC().Truncate(time.Second)
			base := nextHour()
			for it := 0; b.Loop(); it++ {
				ctx, cancel := ctx, context.CancelFunc(func() {})
				if deadline {
					ctx, cancel = context.WithTimeout(ctx, time.Minute)
				}
				res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{
					{Job: "j", Slot: base.Add(time.Duration(it) * time.Second), Lease: time.Minute, NotBefore: notBefore},
				}})
				cancel()
				if err != nil || res[0].Status != slotstore.Won {
					b.Fatalf("claim %d: %+v, %v", it, res, err)
				}
			}
		})
	}
}
