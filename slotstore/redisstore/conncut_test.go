package redisstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// TestConnectionCutDuringRenewal: the holder's connection to Redis fails
// while it renews. A renewal whose request left and whose reply never came
// is an unknown outcome, one that could not be sent is a plain error; neither
// reads as a lost lease. Once the lease expires by Redis's clock another
// replica takes the slot over with a higher fence, and when the holder's
// connection comes back every mutation of its stale claim fails with
// ErrLeaseLost and leaves the new claim as it was.
func TestConnectionCutDuringRenewal(t *testing.T) {
	r := testserver.StartRedis(t)
	p := testserver.StartProxy(t, r.Addr())
	const lease = time.Second
	holder := openWith(t, redisstore.Options{
		Addrs: []string{p.Addr()}, Prefix: "cut:", DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
	})
	other := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, Prefix: "cut:"})
	ctx := t.Context()

	res := claim(t, holder, "holder", batch("cut", 0, 1, lease)...)
	won(t, res)
	old := res[0].Claim
	if err := holder.Renew(ctx, slotstore.RenewParams{Ref: old.Ref, Lease: lease}); err != nil {
		t.Fatalf("renewal through the proxy: %v", err)
	}

	p.Blackhole()
	err := holder.Renew(ctx, slotstore.RenewParams{Ref: old.Ref, Lease: lease})
	if !errors.Is(err, slotstore.ErrOutcomeUnknown) || errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("renewal into a blackhole: %v, want an unknown outcome, not a lost lease", err)
	}
	t.Logf("renewal into a blackhole: %v", err)

	p.Cut()
	err = holder.Renew(ctx, slotstore.RenewParams{Ref: old.Ref, Lease: lease})
	if err == nil || errors.Is(err, slotstore.ErrOutcomeUnknown) || errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("renewal with no connection to be had: %v, want a plain error", err)
	}
	t.Logf("renewal with no connection to be had: %v", err)

	// The blackholed renewal never reached Redis, so the lease ends a lease
	// after the last renewal that did.
	next := claimAfterExpiry(t, other, "other", batch("cut", 0, 1, time.Minute)[0])
	if c := next.Claim; next.Status != slotstore.Won || c.Fence <= old.Fence || c.Attempt != 2 || c.PrevHolder != "holder" {
		t.Fatalf("takeover: %v %+v, want attempt 2 after holder with a fence above %d", next.Status, c, old.Fence)
	}

	p.Restore()
	for name, op := range map[string]func() error{
		"renew": func() error { return holder.Renew(ctx, slotstore.RenewParams{Ref: old.Ref, Lease: lease}) },
		"finish": func() error {
			return holder.Finish(ctx, slotstore.FinishParams{Ref: old.Ref, Outcome: slotstore.Succeeded})
		},
		"release": func() error { return holder.Release(ctx, old.Ref) },
	} {
		if err := op(); !errors.Is(err, slotstore.ErrLeaseLost) {
			t.Errorf("stale %s after the connection came back: %v, want ErrLeaseLost", name, err)
		}
	}
	ms, err := other.History(ctx, slotstore.HistoryParams{Job: "cut"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].State != slotstore.StateRunning || ms[0].Holder != "other" || ms[0].Fence != next.Claim.Fence ||
		!ms[0].LeaseEnd.Equal(next.Marker.LeaseEnd) {
		t.Errorf("marker after the stale mutations: %+v, want the takeover's %+v", ms, next.Marker)
	}
	if err := other.Finish(ctx, slotstore.FinishParams{Ref: next.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Errorf("finish by the new holder: %v", err)
	}
}

// claimAfterExpiry claims r for replica, retrying while the slot is held,
// for at most 10 seconds.
func claimAfterExpiry(t *testing.T, s slotstore.Store, replica string, r slotstore.ClaimRequest) slotstore.ClaimResult {
	t.Helper()
	var res slotstore.ClaimResult
	poll.Until(t, 10*time.Second, r.Job+" free to claim", func() error {
		if res = claim(t, s, replica, r)[0]; res.Status == slotstore.Held {
			return fmt.Errorf("held, %v of its lease left: %+v", res.Remaining, res.Marker)
		}
		return nil
	})
	return res
}
