package etcdstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
)

// TestMutationsGoTogether: finishes sent while another transaction is out
// go in one transaction when it ends; one whose slot another replica took
// over fails its compare, and the others go again without it: each is
// answered as alone, the lost one ErrLeaseLost, the rest done.
func TestMutationsGoTogether(t *testing.T) {
	prefix := freshPrefix()
	s, rc := countedStore(t, prefix)
	other, _ := countedStore(t, prefix)
	ctx := t.Context()
	const n = 12
	var jobs []string
	for i := range n {
		jobs = append(jobs, fmt.Sprintf("g%d", i))
	}
	if _, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	slot := nextHour()
	var reqs []slotstore.ClaimRequest
	for i, j := range jobs {
		lease := time.Minute
		if i == 0 {
			lease = 200 * time.Millisecond // taken over below
		}
		reqs = append(reqs, slotstore.ClaimRequest{Job: j, Slot: slot, Lease: lease})
	}
	res := claim(t, s, "r1", reqs...)
	won(t, res)
	var taken slotstore.ClaimResult
	poll.Until(t, 10*time.Second, "the short lease to end", func() error {
		taken = claim(t, other, "r2", reqs[0])[0]
		if taken.Status != slotstore.Won {
			return fmt.Errorf("takeover: %v", taken.Status)
		}
		return nil
	})

	for _, lost := range []bool{false, true} {
		first := 1
		if lost {
			first = 0
		}
		release := s.HoldGroup()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := first; i < n; i++ {
			ref := res[i].Claim.Ref
			if !lost {
				// Renewals of the same runs, first; then their finishes.
				wg.Go(func() { errs[i] = s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Minute}) })
				continue
			}
			wg.Go(func() { errs[i] = s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}) })
		}
		poll.Until(t, 10*time.Second, "every mutation to wait", func() error {
			if got := s.GroupWaiting(); got != n-first {
				return fmt.Errorf("%d waiting", got)
			}
			return nil
		})
		want := "Txn:1"
		if lost {
			want = "Txn:2" // the group's, whose compare of the lost slot failed; the rest again
		}
		if got := rc.count(func() { release(); wg.Wait() }); got != want {
			t.Errorf("%d mutations sent together (one of a slot taken over: %v): %s, want %s", n-first, lost, got, want)
		}
		for i := first; i < n; i++ {
			switch {
			case i == 0 && !errors.Is(errs[i], slotstore.ErrLeaseLost):
				t.Errorf("finish of the slot taken over: %v, want ErrLeaseLost", errs[i])
			case i > 0 && errs[i] != nil:
				t.Errorf("mutation %d: %v", i, errs[i])
			}
		}
	}
	for i, j := range jobs {
		ms, err := s.History(ctx, slotstore.HistoryParams{Job: j, Limit: 1})
		if err != nil || len(ms) != 1 {
			t.Fatalf("history of %s: %v %v", j, ms, err)
		}
		switch m := ms[0]; {
		case i == 0 && (m.State != slotstore.StateRunning || m.Holder != "r2" || m.Fence != taken.Claim.Fence):
			t.Errorf("slot taken over: %s by %s fence %d, want running by r2 fence %d", m.State, m.Holder, m.Fence, taken.Claim.Fence)
		case i > 0 && (m.State != slotstore.StateDone || m.Outcome != slotstore.Succeeded):
			t.Errorf("%s: %s %s, want done, succeeded", j, m.State, m.Outcome)
		}
	}
}
