package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// A renewal, finish or release whose request goes unanswered for longer
// than the request timeout (here: a member reached through a proxy that
// delays every byte by 1.2 s, so the request lands after its timeout) is
// sent again, to the other member, and decided afresh from the marker read
// back: every call succeeds within its context, none is applied twice, and
// none reports an unknown outcome. Sent once, about half of them would go
// to the slow member and fail with an unknown outcome.
func TestUnansweredMutationsAreSentAgain(t *testing.T) {
	c := sharedEtcd(t)
	m0, m1 := c.Members()[0], c.Members()[1]
	proxy := testserver.StartProxy(t, strings.TrimPrefix(m0.ClientURL(), "http://"))
	prefix := freshPrefix()
	direct := openWith(t, etcdstore.Options{Prefix: prefix})
	slow := openWith(t, etcdstore.Options{Prefix: prefix, Endpoints: []string{"http://" + proxy.Addr(), m1.ClientURL()}})
	proxy.Delay(1200 * time.Millisecond)
	defer proxy.Restore()

	const n = 6
	base := nextHour()
	for i := range n {
		slot := base.Add(time.Duration(i) * time.Minute)
		res, err := direct.Claim(t.Context(), slotstore.ClaimParams{Replica: "r", Requests: []slotstore.ClaimRequest{
			{Job: "resend", Slot: slot, Lease: time.Minute},
		}})
		if err != nil || res[0].Status != slotstore.Won {
			t.Fatalf("claim %d: %v %+v", i, err, res)
		}
		ref := res[0].Claim.Ref
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		var want slotstore.State
		switch i % 3 {
		case 0:
			err, want = slow.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}), slotstore.StateDone
		case 1:
			err, want = slow.Release(ctx, ref), slotstore.StateReleased
		case 2:
			err, want = slow.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Hour}), slotstore.StateRunning
		}
		cancel()
		if err != nil {
			t.Errorf("slot %d: %v (outcome unknown: %v)", i, err, errors.Is(err, slotstore.ErrOutcomeUnknown))
			continue
		}
		hist, err := direct.History(t.Context(), slotstore.HistoryParams{Job: "resend", Limit: n})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range hist {
			if m.Slot.Equal(slot) && (m.State != want || m.Fence != ref.Fence) {
				t.Errorf("slot %d: marker %s fence %d, want %s fence %d", i, m.State, m.Fence, want, ref.Fence)
			}
			if m.Slot.Equal(slot) && want == slotstore.StateRunning && time.Until(m.LeaseEnd) < 50*time.Minute {
				t.Errorf("slot %d: renewed lease ends %v", i, m.LeaseEnd)
			}
		}
	}
}
