package redisstore_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestHistoryPages: a state filter walks past the 1,000 index entries one
// script call looks at, for one job and for every job.
func TestHistoryPages(t *testing.T) {
	r := testserver.StartRedis(t)
	s := open(t, r.Addr())
	ctx := t.Context()
	res := claim(t, s, "r1", batch("pages", 0, 2500, time.Minute)...)
	won(t, res)
	// The oldest slots are the last a walk from the newest reaches.
	for _, i := range []int{0, 1} {
		mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: res[i].Claim.Ref, Outcome: slotstore.Succeeded}))
	}
	mustDo(t, s.Release(ctx, res[2].Claim.Ref))
	other := claim(t, s, "r1", batch("other", 0, 1, time.Minute)...)
	mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: other[0].Claim.Ref, Outcome: slotstore.Failed}))

	for _, c := range []struct {
		p    slotstore.HistoryParams
		want []slotstore.Ref // newest first
	}{
		{slotstore.HistoryParams{Job: "pages", State: slotstore.StateDone}, []slotstore.Ref{res[1].Claim.Ref, res[0].Claim.Ref}},
		{slotstore.HistoryParams{Job: "pages", State: slotstore.StateDone, Limit: 1}, []slotstore.Ref{res[1].Claim.Ref}},
		{slotstore.HistoryParams{Job: "pages", State: slotstore.StateReleased}, []slotstore.Ref{res[2].Claim.Ref}},
		{slotstore.HistoryParams{State: slotstore.StateDone}, []slotstore.Ref{res[1].Claim.Ref, other[0].Claim.Ref, res[0].Claim.Ref}},
		{slotstore.HistoryParams{State: slotstore.StateRunning, Limit: 3}, []slotstore.Ref{res[2499].Claim.Ref, res[2498].Claim.Ref, res[2497].Claim.Ref}},
	} {
		got, err := s.History(ctx, c.p)
		if err != nil {
			t.Fatalf("history %+v: %v", c.p, err)
		}
		if !sameRefs(got, c.want) {
			t.Errorf("history %+v: %v, want %v", c.p, refs(got), c.want)
		}
	}
	all, err := s.History(ctx, slotstore.HistoryParams{Job: "pages", Limit: 3000})
	if err != nil || len(all) != 2500 {
		t.Errorf("history of 2,500 markers: %d, %v", len(all), err)
	}
}

// TestHistoryForgetsExpired: markers Redis has expired vanish from History,
// and Prune counts them once, whether History met them first or not.
func TestHistoryForgetsExpired(t *testing.T) {
	r := testserver.StartRedis(t)
	s := open(t, r.Addr())
	ctx := t.Context()
	// The store has known the job for longer than its slots are old.
	bornAt(t, s, "gone", time.Now().Add(-4*time.Hour))
	past := batch("gone", -3*3600, 6, 100*time.Millisecond)
	for i := range past {
		past[i].Retain = time.Second // ended an hour ago: the markers live as long as their lease
	}
	won(t, claim(t, s, "r1", past...))
	won(t, claim(t, s, "r1", batch("gone", 0, 1, time.Minute)...))
	time.Sleep(200 * time.Millisecond)

	// History of the running markers meets the six expired ones first.
	got, err := s.History(ctx, slotstore.HistoryParams{Job: "gone", State: slotstore.StateRunning})
	if err != nil || len(got) != 1 {
		t.Fatalf("running markers: %v, %v; want the one live marker", refs(got), err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 6 {
		t.Errorf("prune: %d, %v; want the 6 expired markers", n, err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v; want 0", n, err)
	}
}

func refs(ms []slotstore.Marker) []slotstore.Ref {
	out := make([]slotstore.Ref, len(ms))
	for i, m := range ms {
		out[i] = slotstore.Ref{Job: m.Job, Slot: m.Slot, Fence: m.Fence}
	}
	return out
}

func sameRefs(ms []slotstore.Marker, want []slotstore.Ref) bool {
	got := refs(ms)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Job != want[i].Job || !got[i].Slot.Equal(want[i].Slot) || got[i].Fence != want[i].Fence {
			return false
		}
	}
	return true
}
