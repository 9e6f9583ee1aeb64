package etcdstore

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// A caller handed the sending (resign) whose own mutation another leader
// (one whose patience ran out) has already taken finds nothing to take;
// the other leader's group fails on its own member's compare, puts the
// handed caller's mutation back as pending (its compare held) and resigns.
// The pending mutation is still sent, within its context: its caller
// resigned rather than sleep as a leader, and is handed the sending again
// or takes it after its patience.
//
// The interleaving is forced: the test does, under the group's lock, what
// the other leader's sendGroups does (takeGroup, sendGroup, answer,
// resign), on behalf of a finish whose slot was taken over.
func TestGroupSendsARetriedMember(t *testing.T) {
	ctx := t.Context()
	prefix := fmt.Sprintf("group-%d-%d/", os.Getpid(), time.Now().UnixNano())
	openS := func() *Store {
		s, err := Open(ctx, Options{Endpoints: testserver.SharedEtcd(t).Endpoints(), Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := openS(), openS()
	if _, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(time.Minute).UTC().Truncate(time.Hour).Add(time.Hour)
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
		{Job: "a", Slot: slot, Lease: time.Minute}, {Job: "b", Slot: slot, Lease: 200 * time.Millisecond}}})
	if err != nil || res[0].Status != slotstore.Won || res[1].Status != slotstore.Won {
		t.Fatalf("claims: %+v %v", res, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := other.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{{Job: "b", Slot: slot, Lease: time.Minute}}})
		if err == nil && r[0].Status == slotstore.Won {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("takeover of b: %+v %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	gr := &s.group
	waiting := func(n int) {
		for {
			gr.mu.Lock()
			if len(gr.pending) == n {
				return // locked
			}
			gr.mu.Unlock()
			time.Sleep(100 * time.Microsecond)
		}
	}
	// A transaction out (as HoldGroup).
	gr.mu.Lock()
	gr.leaders++
	gr.mu.Unlock()
	renewed := make(chan error, 1)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	go func() { renewed <- s.Renew(rctx, slotstore.RenewParams{Ref: res[0].Claim.Ref, Lease: time.Minute}) }()
	waiting(1)
	gr.mu.Unlock()
	finished := make(chan error, 1)
	go func() {
		finished <- s.Finish(ctx, slotstore.FinishParams{Ref: res[1].Claim.Ref, Outcome: slotstore.Succeeded})
	}()
	waiting(2) // holds the lock
	m1, m3 := gr.pending[0], gr.pending[1]
	if gr.leaders != 1 || m1.lead || m3.lead {
		gr.mu.Unlock()
		t.Skip("setup raced with the patience timers; run again")
	}
	// The transaction out ends: its sender hands the sending to m1 ...
	gr.resign()
	// ... while m3's caller, its patience out, has taken the lead, and
	// takes the group before m1's caller wakes.
	gr.leaders++
	members := s.takeGroup()
	gr.mu.Unlock()
	time.Sleep(100 * time.Millisecond) // m1's caller: lead, nothing to take, waits on its wake
	retry := s.sendGroup(members)      // m3's compare fails, m1's held
	gr.mu.Lock()
	gr.pending = append(retry, gr.pending...)
	for _, m := range members {
		if !contains(retry, m) {
			m.answered = true
			m.signal()
		}
	}
	gr.resign() // m3's caller: own answered
	t.Logf("after the other leader resigned: pending %d, leaders %d, retried %d", len(gr.pending), gr.leaders, len(retry))
	gr.mu.Unlock()
	if err := <-finished; err == nil {
		t.Errorf("finish of the slot taken over: nil error")
	}
	select {
	case err := <-renewed:
		t.Logf("renewal answered: %v", err)
	case <-time.After(5 * time.Second):
		t.Errorf("renewal of a (context 2 s) unanswered after 5 s: its mutation pending, its caller the only leader, asleep on its wake")
	}
}

func contains(gs []*grouped, g *grouped) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}
