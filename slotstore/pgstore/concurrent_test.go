package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestConcurrentBatches: replicas claim overlapping batches of the same
// jobs at once, each in its own shuffled order. No batch fails (in
// particular none is aborted as a deadlock), every slot has one winner,
// and the fences of a job are unique and increase in request order within
// every batch.
func TestConcurrentBatches(t *testing.T) {
	t.Parallel()
	s := newStore(t, func(o *pgstore.Options) { o.PoolSize = 8 })
	const replicas, rounds, perJob = 8, 4, 25
	jobNames := []string{"a", "b", "c"}

	type won struct {
		replica string
		fence   int64
	}
	var (
		mu      sync.Mutex
		winners = map[string][]won{} // job@slot → winners
		fences  = map[string][]int64{}
	)
	var wg sync.WaitGroup
	for r := range replicas {
		replica := fmt.Sprintf("r%d", r)
		rng := rand.New(rand.NewPCG(uint64(r), 7))
		wg.Go(func() {
			for round := range rounds {
				var reqs []slotstore.ClaimRequest
				for _, job := range jobNames {
					for i := range perJob {
						reqs = append(reqs, slotstore.ClaimRequest{Job: job, Slot: slot(round*perJob + i), Lease: time.Minute})
					}
				}
				rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
				res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: reqs})
				if err != nil {
					t.Errorf("%s round %d: %v", replica, round, err)
					return
				}
				last := map[string]int64{}
				mu.Lock()
				for i, c := range res {
					if c.Status != slotstore.Won {
						continue
					}
					k := c.Claim.Job + "@" + c.Claim.Slot.Format(time.RFC3339)
					winners[k] = append(winners[k], won{replica, c.Claim.Fence})
					fences[c.Claim.Job] = append(fences[c.Claim.Job], c.Claim.Fence)
					if c.Claim.Fence <= last[c.Claim.Job] {
						t.Errorf("%s round %d entry %d: fence %d of %s after %d in the same batch", replica, round, i, c.Claim.Fence, c.Claim.Job, last[c.Claim.Job])
					}
					last[c.Claim.Job] = c.Claim.Fence
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(winners) != len(jobNames)*rounds*perJob {
		t.Errorf("%d slots won, want %d", len(winners), len(jobNames)*rounds*perJob)
	}
	for k, w := range winners {
		if len(w) != 1 {
			t.Errorf("%s won %d times: %v", k, len(w), w)
		}
	}
	for job, fs := range fences {
		slices.Sort(fs)
		if len(slices.Compact(fs)) != rounds*perJob {
			t.Errorf("fences of %s are not unique", job)
		}
	}
}

// TestClaimRereadsChangedMarker: a fenced mutation in progress when a claim
// reaches a marker makes the claim wait for it and decide that slot on the
// marker it leaves, with fences still in request order.
// The mutation is played by a transaction holding the marker's row lock,
// so that the claim is certain to meet it in progress.
func TestClaimRereadsChangedMarker(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		want      slotstore.Status
	}{
		{"renewed", "lease_end = clock_timestamp() + interval '1 hour'", slotstore.Held},
		{"released", "state = 'released', lease_end = clock_timestamp()", slotstore.Won},
		{"finished", "state = 'done', outcome = 'succeeded', finished_at = clock_timestamp()", slotstore.Finished},
		{"retrying", "state = 'retrying', outcome = 'failed', finished_at = clock_timestamp(), " +
			"lease_end = clock_timestamp() + interval '1 hour'", slotstore.Waiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newStore(t)
			pool := newPool(t, testserver.SharedPostgres(t).DSN())
			first := claimOne(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot(1), Lease: 50 * time.Millisecond})
			time.Sleep(time.Until(first.Marker.LeaseEnd) + 20*time.Millisecond)

			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			tag, err := tx.Exec(ctx, "UPDATE "+pgx.Identifier{s.Schema(), "markers"}.Sanitize()+" SET "+tc.set+
				" WHERE job = 'j' AND fence = $1", first.Claim.Fence)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("mutation: %v, %v", tag, err)
			}

			reqs := []slotstore.ClaimRequest{
				{Job: "j", Slot: slot(0), Lease: time.Minute},
				{Job: "j", Slot: slot(1), Lease: time.Minute},
				{Job: "j", Slot: slot(2), Lease: time.Minute},
			}
			type claimed struct {
				res []slotstore.ClaimResult
				err error
			}
			next := make(chan claimed, 1)
			go func() {
				res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: reqs})
				next <- claimed{res, err}
			}()
			waitForLockWait(t, pool, s.Schema())
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			got := <-next
			if got.err != nil {
				t.Fatalf("claim: %v", got.err)
			}
			if st := got.res[1].Status; st != tc.want {
				t.Fatalf("claim of the %s slot: %v, want %v", tc.name, st, tc.want)
			}
			var fences []int64
			for _, r := range got.res {
				if r.Status == slotstore.Won {
					fences = append(fences, r.Claim.Fence)
				}
			}
			wantWon := 2
			if tc.want == slotstore.Won {
				wantWon = 3
				if c := got.res[1].Claim; c.Attempt != 2 || c.PrevHolder != "r1" {
					t.Errorf("claim of the released slot: %+v, want attempt 2 after r1", c)
				}
			}
			if len(fences) != wantWon || fences[0] <= first.Claim.Fence || !slices.IsSorted(fences) ||
				len(slices.Compact(slices.Clone(fences))) != wantWon {
				t.Errorf("fences in request order %v after %d, want %d increasing", fences, first.Claim.Fence, wantWon)
			}
		})
	}
}
