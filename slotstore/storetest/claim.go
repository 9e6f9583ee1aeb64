package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// testConcurrentClaimers: many replicas claim one slot at the same moment;
// exactly one wins and the others see its claim.
func testConcurrentClaimers(t *testing.T, s slotstore.Store) {
	const claimers = 32
	var last int64
	for _, slot := range slots(4) {
		r := req("contended", slot, longLease)
		results, errs := claimAtOnce(t, s, claimers, r)

		winner := -1
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("slot %s: claim by r%02d: %v", stamp(slot), i, errs[i])
			}
			switch res.Status {
			case slotstore.Won:
				if winner >= 0 {
					t.Fatalf("slot %s: r%02d and r%02d both won", stamp(slot), winner, i)
				}
				winner = i
				checkWon(t, res, fmt.Sprintf("r%02d", i), r)
			case slotstore.Held:
				if res.Remaining <= 0 || res.Remaining > longLease {
					t.Errorf("slot %s: r%02d held with remaining %v, want in (0, %v]", stamp(slot), i, res.Remaining, longLease)
				}
			default:
				t.Errorf("slot %s: r%02d got %v, want won or held", stamp(slot), i, res.Status)
			}
		}
		if winner < 0 {
			t.Fatalf("slot %s: no claimer won", stamp(slot))
		}
		won := results[winner].Claim
		for i, res := range results {
			if res.Status == slotstore.Held && (res.Marker.Holder != fmt.Sprintf("r%02d", winner) || res.Marker.Fence != won.Fence) {
				t.Errorf("slot %s: r%02d held by %s fence %d, want r%02d fence %d",
					stamp(slot), i, res.Marker.Holder, res.Marker.Fence, winner, won.Fence)
			}
		}
		if won.Fence <= last {
			t.Errorf("slot %s: fence %d after fence %d of an earlier slot", stamp(slot), won.Fence, last)
		}
		last = won.Fence
	}
}

// testSlotNormalised: a slot is its UTC second, whatever the location or
// sub-second part of the instant a request names.
func testSlotNormalised(t *testing.T, s slotstore.Store) {
	slot := slots(1)[0]
	zone := time.FixedZone("UTC+05:30", 5*3600+1800)
	won := mustWin(t, s, "r1", req("norm", slot.Add(789*time.Millisecond).In(zone), longLease))
	for what, got := range map[string]time.Time{"claim": won.Claim.Slot, "marker": won.Marker.Slot} {
		if !got.Equal(slot) || got.Location() != time.UTC {
			t.Errorf("%s slot %v, want %v in UTC", what, got, slot)
		}
	}
	for _, same := range []time.Time{slot, slot.Add(999 * time.Millisecond), slot.In(zone)} {
		res := claimOne(t, s, "r2", req("norm", same, longLease))
		wantStatus(t, "claim of "+same.String(), res, slotstore.Held)
		if res.Marker.Fence != won.Claim.Fence {
			t.Errorf("claim of %v: held by fence %d, want %d", same, res.Marker.Fence, won.Claim.Fence)
		}
	}
	mustWin(t, s, "r2", req("norm", slot.Add(time.Second), longLease))

	ref := won.Claim.Ref
	ref.Slot = slot.In(zone)
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: longLease}); err != nil {
		t.Errorf("renew with the slot in another location: %v", err)
	}
	if m := mustFind(t, s, "norm", slot); m.Slot.Location() != time.UTC || m.Fence != won.Claim.Fence {
		t.Errorf("history: %+v", m)
	}
}

// testHeld: a slot under a live lease cannot be claimed, not even by its
// holder.
func testHeld(t *testing.T, s slotstore.Store) {
	slot := slots(1)[0]
	won := mustWin(t, s, "r1", req("held", slot, longLease))
	for _, replica := range []string{"r2", "r1"} {
		res := claimOne(t, s, replica, req("held", slot, longLease))
		wantStatus(t, "claim by "+replica, res, slotstore.Held)
		if res.Remaining <= longLease/2 || res.Remaining > longLease {
			t.Errorf("claim by %s: remaining %v, want about %v", replica, res.Remaining, longLease)
		}
		m := res.Marker
		if m.State != slotstore.StateRunning || m.Holder != "r1" || m.Fence != won.Claim.Fence || m.Attempt != 1 {
			t.Errorf("claim by %s: marker %+v", replica, m)
		}
		if !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
			t.Errorf("claim by %s: Err() = %v, want ErrSlotTaken", replica, res.Err())
		}
	}
}

// testFinishedIsFinal: a finished slot is never claimed again, whatever its
// outcome, even after its lease would have expired.
func testFinishedIsFinal(t *testing.T, s slotstore.Store) {
	outcomes := []slotstore.Outcome{slotstore.Succeeded, slotstore.Failed, slotstore.TimedOut}
	sl := slots(len(outcomes))
	var leaseEnd time.Time
	for i, o := range outcomes {
		won := mustWin(t, s, "r1", req("final", sl[i], shortLease))
		leaseEnd = won.Marker.LeaseEnd
		err := s.Finish(t.Context(), slotstore.FinishParams{Ref: won.Claim.Ref, Outcome: o, Duration: time.Millisecond})
		if err != nil {
			t.Fatalf("finish %s: %v", o, err)
		}
		res := claimOne(t, s, "r2", req("final", sl[i], longLease))
		wantStatus(t, "claim after "+string(o), res, slotstore.Finished)
		if res.Marker.State != slotstore.StateDone || res.Marker.Outcome != o {
			t.Errorf("claim after %s: marker %+v", o, res.Marker)
		}
	}
	waitStoreTime(t, s, "final-clock", leaseEnd)
	for i, o := range outcomes {
		for _, onCrash := range []policy.OnCrash{policy.OnCrashRetry, policy.OnCrashSkip} {
			r := req("final", sl[i], longLease)
			r.OnCrash = onCrash
			wantStatus(t, fmt.Sprintf("claim after %s and expiry, on_crash %s", o, onCrash),
				claimOne(t, s, "r3", r), slotstore.Finished)
		}
	}
}

// claimAtOnce sends r from n replicas (r00, r01...) at the same moment, each
// in a batch of its own, and returns each one's result and error.
func claimAtOnce(t *testing.T, s slotstore.Store, n int, r slotstore.ClaimRequest) ([]slotstore.ClaimResult, []error) {
	results := make([]slotstore.ClaimResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := s.Claim(t.Context(), slotstore.ClaimParams{
				Replica: fmt.Sprintf("r%02d", i), Requests: []slotstore.ClaimRequest{r},
			})
			if err == nil && len(res) != 1 {
				err = fmt.Errorf("%d results, want 1", len(res))
			}
			if err == nil {
				results[i] = res[0]
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}
