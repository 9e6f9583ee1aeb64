package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestLiveIndex: History of the running or retrying markers of every job
// reads the store's live index, so it looks at the live markers only, not
// at the many finished ones of many jobs, and the index stays exact through
// finish, retry, release and a claim that abandons.
func TestLiveIndex(t *testing.T) {
	r := testserver.StartRedis(t)
	s := open(t, r.Addr())
	stats := newCommandStats(t, r.Addr())
	ctx := t.Context()
	var reqs []slotstore.ClaimRequest
	for j := range 50 {
		reqs = append(reqs, batch(fmt.Sprintf("live-%02d", j), 0, 40, time.Minute)...)
	}
	res := claim(t, s, "r1", reqs...)
	won(t, res)
	var running, retrying []slotstore.Ref
	for i, c := range res {
		switch {
		case i%100 == 0:
			running = append(running, c.Claim.Ref)
		case i%100 == 1:
			mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: c.Claim.Ref, Outcome: slotstore.Failed, RetryAt: time.Now().Add(time.Hour)}))
			retrying = append(retrying, c.Claim.Ref)
		case i%100 == 2:
			mustDo(t, s.Release(ctx, c.Claim.Ref))
		default:
			mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: c.Claim.Ref, Outcome: slotstore.Succeeded}))
		}
	}
	for _, c := range []struct {
		state slotstore.State
		want  []slotstore.Ref
	}{{slotstore.StateRunning, running}, {slotstore.StateRetrying, retrying}} {
		var got []slotstore.Marker
		var err error
		cmds := stats.count(func() { got, err = s.History(ctx, slotstore.HistoryParams{State: c.state, Limit: 10000}) })
		mustDo(t, err)
		if len(got) != len(c.want) {
			t.Errorf("%s markers of every job: %d, want %d", c.state, len(got), len(c.want))
		}
		for i := 1; i < len(got); i++ {
			if got[i].Slot.After(got[i-1].Slot) || got[i].Slot.Equal(got[i-1].Slot) && got[i].Job < got[i-1].Job {
				t.Errorf("%s markers out of order: %v before %v", c.state, got[i-1].Ref(), got[i].Ref())
			}
		}
		want := map[slotstore.Ref]bool{}
		for _, ref := range c.want {
			want[slotstore.Ref{Job: ref.Job, Slot: ref.Slot.UTC(), Fence: ref.Fence}] = true
		}
		for _, m := range got {
			if !want[slotstore.Ref{Job: m.Job, Slot: m.Slot, Fence: m.Fence}] || m.State != c.state {
				t.Errorf("%s markers of every job list %+v", c.state, m)
			}
		}
		// The index holds the running and retrying markers: 40 of 2,000.
		if cmds["hmget"] > len(running)+len(retrying) || cmds["smembers"] > 0 {
			t.Errorf("%s markers of every job: commands %v; want at most %d markers read, no list of jobs",
				c.state, cmds, len(running)+len(retrying))
		}
		t.Logf("%s markers of every job: %d, commands %v", c.state, len(got), cmds)
	}
	// A limit cuts the newest first.
	got, err := s.History(ctx, slotstore.HistoryParams{State: slotstore.StateRunning, Limit: 3})
	mustDo(t, err)
	all, err := s.History(ctx, slotstore.HistoryParams{State: slotstore.StateRunning, Limit: 100})
	mustDo(t, err)
	if len(got) != 3 || !sameRefs(got, refs(all[:3])) {
		t.Errorf("running markers, limit 3: %v, want %v", refs(got), refs(all[:3]))
	}
}
