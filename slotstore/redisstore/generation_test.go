package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// TestGenerationAfterDataLoss: Redis loses every key (FLUSHALL, or a
// redis-server killed and started again with no persistence) after slots
// were claimed, one run to its end and one still running. Claims of those
// slots afterwards, as catch-up sends them, do not run them again: they
// record them skipped for data loss, with no fence, whether the job was
// enrolled again first or its generation begins with the claim itself. A
// slot less than slotstore.ClaimLead after the new generation began is not
// covered (a claim of it could have been made ahead, before the loss) and
// is skipped for data loss too; the first slot from then on is claimed as
// usual, with a fence above every fence issued before the loss.
func TestGenerationAfterDataLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lose   func(t *testing.T, r *testserver.Redis)
		enroll bool // enroll the job again before claiming
	}{
		{"flushall", flushAll, true},
		{"restart empty", func(t *testing.T, r *testserver.Redis) { r.Restart(t) }, false},
		{"restart empty, enrolled again", func(t *testing.T, r *testserver.Redis) { r.Restart(t) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testserver.StartRedis(t)
			s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, DialTimeout: time.Second, ReadTimeout: time.Second})
			const job = "lost"
			born := enroll(t, s, job).Born
			// Two slots of the generation, the first seconds after it began.
			first := born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Second)
			reqs := []slotstore.ClaimRequest{
				{Job: job, Slot: first, Lease: time.Minute},
				{Job: job, Slot: first.Add(time.Second), Lease: time.Minute},
			}
			before := claim(t, s, "r1", reqs...)
			won(t, before)
			mustDo(t, s.Finish(t.Context(), slotstore.FinishParams{Ref: before[0].Claim.Ref, Outcome: slotstore.Succeeded}))
			lastFence := max(before[0].Claim.Fence, before[1].Claim.Fence)

			// Both slots are in the past when the data goes.
			time.Sleep(time.Until(reqs[1].Slot.Add(100 * time.Millisecond)))
			tc.lose(t, r)

			// The store's connections from before a restart fail first.
			var gen slotstore.Generation
			if tc.enroll {
				poll.Until(t, 10*time.Second, "enroll after the loss", func() error {
					g, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{job}})
					if err == nil {
						gen = g[0]
					}
					return err
				})
			}
			var after []slotstore.ClaimResult
			poll.Until(t, 10*time.Second, "claim after the loss", func() (err error) {
				after, err = s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r2", Requests: reqs})
				return err
			})
			if !tc.enroll {
				gen = enroll(t, s, job)
			}
			if !gen.Born.After(reqs[1].Slot) {
				t.Errorf("generation after the loss born %s, want after the lost slots (first generation %s)", gen.Born, born)
			}
			for i, res := range after {
				if m := res.Marker; res.Status != slotstore.Skipped || m.State != slotstore.StateSkipped ||
					m.Reason != slotstore.ReasonDataLoss || m.Fence != 0 || m.Attempt != 0 || m.Holder != "r2" {
					t.Errorf("claim of lost slot %d: %v, marker %+v; want skipped for data loss, no fence", i, res.Status, m)
				}
			}
			// The skips are recorded: another claim finds them.
			for i, res := range claim(t, s, "r3", reqs...) {
				if res.Status != slotstore.Skipped || res.Marker.Holder != "r2" {
					t.Errorf("claim of lost slot %d again: %v, marker %+v", i, res.Status, res.Marker)
				}
			}
			// The last whole second before the generation covers slots: at
			// or after its beginning, less than ClaimLead after it.
			early := gen.From().Add(-time.Nanosecond).Truncate(time.Second)
			res := claim(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: early, Lease: time.Minute})[0]
			if res.Status != slotstore.Skipped || res.Marker.Reason != slotstore.ReasonDataLoss || res.Marker.Fence != 0 {
				t.Errorf("claim of slot %s, less than ClaimLead after the new generation began at %s: %v %+v, want skipped for data loss",
					early, gen.Born, res.Status, res.Marker)
			}
			next := claim(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: early.Add(time.Second), Lease: time.Minute})[0]
			if next.Status != slotstore.Won || next.Claim.Attempt != 1 || next.Claim.Fence <= lastFence {
				t.Errorf("claim of a slot of the new generation: %v %+v, want a first claim with a fence above %d",
					next.Status, next.Claim, lastFence)
			}
			t.Logf("generation %s, then %s; fence before the loss %d, after %d", born, gen.Born, lastFence, next.Claim.Fence)
		})
	}
}

// TestBackfillCoversFromClaimLead: a backfill wins a slot recorded skipped
// since the job's generation began only when the generation covers it: a
// slot less than slotstore.ClaimLead after Born (a claim of it could have
// been made ahead, before the generation) stays skipped; the first slot
// from Born + ClaimLead on is won.
func TestBackfillCoversFromClaimLead(t *testing.T) {
	s := open(t, testserver.StartRedis(t).Addr())
	const job = "bf"
	gen := enroll(t, s, job)
	// At or after Born, less than ClaimLead after it; then the next second.
	early := gen.From().Add(-time.Nanosecond).Truncate(time.Second)
	covered := early.Add(time.Second)
	res, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r1", Requests: []slotstore.SkipRequest{
		{Job: job, Slot: early, Reason: "missed: down"}, {Job: job, Slot: covered, Reason: "missed: down"}}})
	mustDo(t, err)
	for i, r := range res {
		if r.Status != slotstore.Skipped || r.Marker.ClaimedAt.Before(gen.Born) {
			t.Fatalf("skip %d: %v %+v, want skipped since the generation began at %s", i, r.Status, r.Marker, gen.Born)
		}
	}
	got := claim(t, s, "r2", slotstore.ClaimRequest{Job: job, Slot: early, Lease: time.Minute, Backfill: true},
		slotstore.ClaimRequest{Job: job, Slot: covered, Lease: time.Minute, Backfill: true})
	if got[0].Status != slotstore.Skipped || got[0].Marker.Holder != "r1" {
		t.Errorf("backfill of slot %s, less than ClaimLead after the generation began at %s: %v %+v, want skipped as before",
			early, gen.Born, got[0].Status, got[0].Marker)
	}
	if got[1].Status != slotstore.Won || !got[1].Marker.Backfill {
		t.Errorf("backfill of slot %s, the generation's first covered second: %v %+v, want won", covered, got[1].Status, got[1].Marker)
	}
}

// TestGenerationClusterMasterLoss: in a Cluster, one master loses its data.
// Only the jobs whose hash slots it serves begin a new generation and have
// their old slots skipped; a job on another master keeps its generation
// and markers, so its finished slot stays finished.
func TestGenerationClusterMasterLoss(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	s := open(t, c.Addrs()...)
	lost, kept, master := jobsOnTwoMasters(t, s)
	gens := enrollAll(t, s, lost, kept)
	// The first whole second both generations cover.
	slot := gens[0].From()
	if gens[1].From().After(slot) {
		slot = gens[1].From()
	}
	slot = slot.Add(time.Second - time.Nanosecond).Truncate(time.Second)
	reqs := []slotstore.ClaimRequest{{Job: lost, Slot: slot, Lease: time.Minute}, {Job: kept, Slot: slot, Lease: time.Minute}}
	res := claim(t, s, "r1", reqs...)
	won(t, res)
	for _, r := range res {
		mustDo(t, s.Finish(t.Context(), slotstore.FinishParams{Ref: r.Claim.Ref, Outcome: slotstore.Succeeded}))
	}
	time.Sleep(time.Until(slot.Add(100 * time.Millisecond)))
	if err := master.FlushAll(t.Context()).Err(); err != nil {
		t.Fatalf("flushall on the master of %q: %v", lost, err)
	}

	again := enrollAll(t, s, lost, kept)
	if !again[0].Born.After(slot) {
		t.Errorf("generation of %q after its master lost its data: %s, want after %s", lost, again[0].Born, slot)
	}
	if !again[1].Born.Equal(gens[1].Born) {
		t.Errorf("generation of %q on another master: %s, want %s as before", kept, again[1].Born, gens[1].Born)
	}
	after := claim(t, s, "r2", reqs...)
	if after[0].Status != slotstore.Skipped || after[0].Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("claim of %q's lost slot: %v %+v, want skipped for data loss", lost, after[0].Status, after[0].Marker)
	}
	if after[1].Status != slotstore.Finished || after[1].Marker.Fence != res[1].Claim.Fence {
		t.Errorf("claim of %q's slot on another master: %v %+v, want finished as before", kept, after[1].Status, after[1].Marker)
	}
}

// jobsOnTwoMasters returns two job names whose keys live on different
// masters of the Cluster behind s, and a client of the first one's master.
func jobsOnTwoMasters(t *testing.T, s *redisstore.Store) (string, string, *redis.Client) {
	t.Helper()
	cc := s.Client().(*redis.ClusterClient)
	masterOf := func(job string) *redis.Client {
		m, err := cc.MasterForKey(t.Context(), s.Prefix()+"{"+job+"}:gen")
		if err != nil {
			t.Fatalf("master of %q: %v", job, err)
		}
		return m
	}
	first := masterOf("j0")
	for i := 1; i < 100; i++ {
		job := fmt.Sprintf("j%d", i)
		if m := masterOf(job); m.Options().Addr != first.Options().Addr {
			return "j0", job, first
		}
	}
	t.Fatal("no two jobs on different masters")
	return "", "", nil
}

func enroll(t *testing.T, s slotstore.Store, job string) slotstore.Generation {
	t.Helper()
	return enrollAll(t, s, job)[0]
}

func enrollAll(t *testing.T, s slotstore.Store, jobs ...string) []slotstore.Generation {
	t.Helper()
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: jobs})
	if err != nil || len(gens) != len(jobs) {
		t.Fatalf("enroll %q: %v, %v", jobs, gens, err)
	}
	return gens
}

// flushAll empties the server at r, as FLUSHALL does.
func flushAll(t *testing.T, r *testserver.Redis) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	if err := c.FlushAll(t.Context()).Err(); err != nil {
		t.Fatalf("flushall: %v", err)
	}
}
