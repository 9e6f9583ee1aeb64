package etcdstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// closed reports whether ch is closed, waiting at most d for it.
func closed(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// TestWatchHolderProcessLease: a holder whose process goes away without
// releasing its slot (its store closed, its lease not revoked) loses its
// holder key when its process lease expires, by the cluster's clock, and a
// watching successor wakes; the slot's own lease still runs, so a claim
// then answers Held with what remains of it.
func TestWatchHolderProcessLease(t *testing.T) {
	waiter := open(t)
	holder, err := etcdstore.Open(t.Context(), etcdstore.Options{
		Endpoints: sharedEtcd(t).Endpoints(), Prefix: waiter.Prefix(), LeaseTTL: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	r := slotstore.ClaimRequest{Job: "w", Slot: nextHour(), Lease: time.Minute}
	res := claim(t, holder, "holder", r)
	won(t, res)
	ref := res[0].Claim.Ref
	gone := waiter.WatchHolder(t.Context(), ref)
	// A renewal puts the holder key again under the same claim: no wake.
	if err := holder.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if closed(gone, 300*time.Millisecond) {
		t.Fatal("the watch woke while the holder held the slot")
	}
	closedAt := time.Now()
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(gone, 15*time.Second) {
		t.Fatal("the watch did not wake within 15s of the holder's process going away")
	}
	t.Logf("woke %v after the holder closed (process lease TTL 2s)", time.Since(closedAt))
	after := claim(t, waiter, "waiter", r)[0]
	if after.Status != slotstore.Held || after.Remaining <= 0 || after.Marker.Fence != ref.Fence {
		t.Errorf("claim after the wake: %v, remaining %v, fence %d; want held by fence %d", after.Status, after.Remaining,
			after.Marker.Fence, ref.Fence)
	}
}

// TestWatchHolderEnds: the watch wakes when the slot finishes, is
// released, taken over or replaced, and at once for a claim that no
// longer holds its slot or a context that ends.
func TestWatchHolderEnds(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	base := nextHour()
	var i int
	next := func(lease time.Duration) slotstore.Claim {
		i++
		return claim(t, s, "r", slotstore.ClaimRequest{Job: "we", Slot: base.Add(time.Duration(i) * time.Minute), Lease: lease})[0].Claim
	}
	for name, end := range map[string]func(c slotstore.Claim) error{
		"finish": func(c slotstore.Claim) error {
			return s.Finish(ctx, slotstore.FinishParams{Ref: c.Ref, Outcome: slotstore.Succeeded})
		},
		"finish for a retry": func(c slotstore.Claim) error {
			return s.Finish(ctx, slotstore.FinishParams{Ref: c.Ref, Outcome: slotstore.Failed, RetryAt: time.Now().Add(time.Hour)})
		},
		"release": func(c slotstore.Claim) error { return s.Release(ctx, c.Ref) },
	} {
		c := next(time.Minute)
		gone := s.WatchHolder(ctx, c.Ref)
		if closed(gone, 100*time.Millisecond) {
			t.Fatalf("%s: the watch woke before", name)
		}
		if err := end(c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !closed(gone, 10*time.Second) {
			t.Errorf("%s: the watch did not wake", name)
		}
		if !closed(s.WatchHolder(ctx, c.Ref), 10*time.Second) {
			t.Errorf("%s: a watch begun after did not wake at once", name)
		}
	}

	// Taken over after its lease expired.
	old := next(100 * time.Millisecond)
	gone := s.WatchHolder(ctx, old.Ref)
	r := slotstore.ClaimRequest{Job: "we", Slot: old.Slot, Lease: time.Minute}
	poll.Until(t, 10*time.Second, "a takeover once the lease expired", func() error {
		if res := claim(t, s, "r2", r)[0]; res.Status != slotstore.Won {
			return fmt.Errorf("claim: %v", res.Status)
		}
		return nil
	})
	if !closed(gone, 10*time.Second) {
		t.Error("takeover: the watch of the old claim did not wake")
	}

	// Replaced by a claim of a later slot.
	running := next(time.Minute)
	gone = s.WatchHolder(ctx, running.Ref)
	i++
	rep := claim(t, s, "r", slotstore.ClaimRequest{Job: "we", Slot: base.Add(time.Duration(i) * time.Minute), Lease: time.Minute,
		Overlap: "replace"})[0]
	if len(rep.Replaced) == 0 {
		t.Fatalf("replace claim replaced nothing: %+v", rep)
	}
	if !closed(gone, 10*time.Second) {
		t.Error("replace: the watch of the replaced claim did not wake")
	}

	// A fence the slot never had, and a context that ends.
	live := next(time.Minute)
	wrong := live.Ref
	wrong.Fence++
	if !closed(s.WatchHolder(ctx, wrong), 10*time.Second) {
		t.Error("a watch of a fence the slot does not have did not wake at once")
	}
	cctx, cancel := context.WithCancel(ctx)
	gone = s.WatchHolder(cctx, live.Ref)
	if closed(gone, 100*time.Millisecond) {
		t.Fatal("the watch of a live claim woke")
	}
	cancel()
	if !closed(gone, 10*time.Second) {
		t.Error("the watch did not end with its context")
	}
	// And the store's closing.
	gone = s.WatchHolder(ctx, live.Ref)
	s.Close()
	if !closed(gone, 10*time.Second) {
		t.Error("the watch did not end when the store closed")
	}
}

// TestPauseSeenByAnother: a pause one replica sets is seen by another's
// Pauses, from its watched copy, and so is the resume.
func TestPauseSeenByAnother(t *testing.T) {
	a := open(t)
	b := openWith(t, etcdstore.Options{Prefix: a.Prefix()})
	ctx := t.Context()
	if _, err := b.Pauses(ctx); err != nil { // b's copy is loaded
		t.Fatal(err)
	}
	for _, paused := range []bool{true, false} {
		set := time.Now()
		if err := a.SetPause(ctx, slotstore.PauseParams{Job: "j", Paused: paused, By: "a"}); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, fmt.Sprintf("the other replica to see paused %v", paused), func() error {
			p, err := b.Pauses(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if (len(p.Jobs) == 1) != paused {
				return fmt.Errorf("it sees %+v", p)
			}
			return nil
		})
		t.Logf("paused %v: seen by the other replica after %v", paused, time.Since(set))
	}
}
