package etcdstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// claimOnEach claims, at the same moment, slot i of job for each store i
// with overlap o, and returns the results. Each store first learns the
// job's generation and job key (an enrollment, a skip of a slot of its
// own), so its claim's transaction compares those unchanged keys and the
// job's running slots, and only the running slots tell it of the others.
func claimOnEach(t *testing.T, stores []*etcdstore.Store, job string, o policy.Overlap) []slotstore.ClaimResult {
	t.Helper()
	base := nextHour()
	for i, s := range stores {
		if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{job}}); err != nil {
			t.Fatal(err)
		}
		_, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "warm", Requests: []slotstore.SkipRequest{
			{Job: job, Slot: base.Add(-time.Duration(i+1) * time.Second), Reason: "warm up"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := make([]slotstore.ClaimResult, len(stores))
	errs := make([]error, len(stores))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			r := slotstore.ClaimRequest{Job: job, Slot: base.Add(time.Duration(i) * time.Minute), Lease: time.Minute, Overlap: o}
			res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: fmt.Sprint("r", i), Requests: []slotstore.ClaimRequest{r}})
			if err == nil {
				out[i] = res[0]
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim by store %d: %v", i, err)
		}
	}
	return out
}

// replicasOn opens n stores on one fresh prefix.
func replicasOn(t *testing.T, n int) []*etcdstore.Store {
	stores := []*etcdstore.Store{open(t)}
	for len(stores) < n {
		stores = append(stores, openWith(t, etcdstore.Options{Prefix: stores[0].Prefix()}))
	}
	return stores
}

// TestForbidRace: replicas that claim different slots of one job with
// overlap forbid at the same moment: one wins, the others see it running
// and record their slots skipped. A claim decided on a running range that
// changed before it committed is decided again.
func TestForbidRace(t *testing.T) {
	stores := replicasOn(t, 6)
	for round := range 3 {
		job := fmt.Sprint("forbid", round)
		res := claimOnEach(t, stores, job, policy.OverlapForbid)
		var winners []int
		for i, r := range res {
			switch r.Status {
			case slotstore.Won:
				winners = append(winners, i)
			case slotstore.Skipped:
				if r.Marker.Reason != slotstore.ReasonOverlap {
					t.Errorf("round %d, store %d: skipped for %q", round, i, r.Marker.Reason)
				}
			default:
				t.Errorf("round %d, store %d: %v", round, i, r.Status)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: stores %v won, want one", round, winners)
		}
		running, err := stores[0].History(t.Context(), slotstore.HistoryParams{Job: job, State: slotstore.StateRunning})
		if err != nil || len(running) != 1 {
			t.Fatalf("round %d: running markers %+v, %v; want one", round, running, err)
		}
	}
}

// TestReplaceRace: replicas that claim different slots of one job with
// overlap replace at the same moment all win, each replacing what ran
// when it committed; in the end one slot runs and every other is replaced,
// each exactly once.
func TestReplaceRace(t *testing.T) {
	stores := replicasOn(t, 6)
	const job = "replace-race"
	res := claimOnEach(t, stores, job, policy.OverlapReplace)
	replaced := map[time.Time]int{}
	for i, r := range res {
		if r.Status != slotstore.Won {
			t.Fatalf("store %d: %v, want won", i, r.Status)
		}
		for _, ref := range r.Replaced {
			replaced[ref.Slot]++
		}
	}
	ms, err := stores[0].History(t.Context(), slotstore.HistoryParams{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	runningCount := 0
	for _, m := range ms {
		if m.Reason == "warm up" {
			continue
		}
		switch m.State {
		case slotstore.StateRunning:
			runningCount++
			if replaced[m.Slot] != 0 {
				t.Errorf("%v runs, yet a claim says it replaced it", m.Slot)
			}
		case slotstore.StateReplaced:
			if replaced[m.Slot] != 1 {
				t.Errorf("%v is replaced, by %d claims' account", m.Slot, replaced[m.Slot])
			}
		default:
			t.Errorf("marker %+v", m)
		}
	}
	if runningCount != 1 || len(ms) != 2*len(stores) {
		t.Errorf("%d markers, %d running; want %d, one running", len(ms), runningCount, 2*len(stores))
	}
}
