package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// TestDeletedGenerationAfterRestoreSkips: as redisstore's doc says, after
// restoring a backup, deleting every <prefix>{...}:gen key makes each job
// begin a new generation at its next claim, so the slots the backup lost
// are skipped, not run again, even though the job's fence counter exists.
func TestDeletedGenerationAfterRestoreSkips(t *testing.T) {
	r := testserver.StartRedis(t)
	s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, Prefix: "rv:"})
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	ctx := t.Context()
	const job = "j"
	born := enroll(t, s, job).Born
	before := born.Add(slotstore.ClaimLead).Truncate(time.Second).Add(time.Second)
	after := before.Add(time.Second)
	run := func(slot time.Time) {
		res := claim(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: slot, Lease: time.Minute})
		won(t, res)
		mustDo(t, s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}))
	}
	time.Sleep(time.Until(after) + 50*time.Millisecond)
	run(before)
	// The backup: every key, dumped.
	keys, err := c.Keys(ctx, "rv:*").Result()
	mustDo(t, err)
	dumps := map[string]string{}
	for _, k := range keys {
		d, err := c.Dump(ctx, k).Result()
		mustDo(t, err)
		dumps[k] = d
	}
	run(after)
	// The restore, then the doc's advice: delete every gen key.
	mustDo(t, c.FlushAll(ctx).Err())
	for k, d := range dumps {
		mustDo(t, c.Restore(ctx, k, 0, d).Err())
	}
	gens, err := c.Keys(ctx, "rv:{*}:gen").Result()
	mustDo(t, err)
	if len(gens) == 0 {
		t.Fatal("no gen key to delete")
	}
	mustDo(t, c.Del(ctx, gens...).Err())

	res := claim(t, s, "r2", slotstore.ClaimRequest{Job: job, Slot: after, Lease: time.Minute})
	if res[0].Status == slotstore.Won {
		t.Errorf("slot %v, finished after the backup, won again (fence %d) after the doc's restore procedure", after, res[0].Claim.Fence)
	}
	t.Logf("generation now: %v", enroll(t, s, job).Born)
}

// TestRestoredRunningMarkerIsNotTakenOver: a marker claimed before the
// job's generation began (a backup taken while the slot ran, restored after
// it finished) is abandoned for data loss once its lease has ended, never
// taken over, while a live lease on it still answers held.
func TestRestoredRunningMarkerIsNotTakenOver(t *testing.T) {
	r := testserver.StartRedis(t)
	s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, Prefix: "rr:"})
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	ctx := t.Context()
	const job = "j"
	slot := enroll(t, s, job).From().Truncate(time.Second).Add(time.Second)
	res := claim(t, s, "r1", slotstore.ClaimRequest{Job: job, Slot: slot, Lease: 300 * time.Millisecond})
	won(t, res)
	// The restore's rebirth: the generation begins after the claim.
	time.Sleep(5 * time.Millisecond)
	mustDo(t, c.Del(ctx, "rr:{j}:gen").Err())
	if held := claim(t, s, "r2", slotstore.ClaimRequest{Job: job, Slot: slot, Lease: time.Minute, TakeoverOnly: true}); held[0].Status != slotstore.Held {
		t.Fatalf("claim under a live lease: %v", held[0].Status)
	}
	time.Sleep(time.Until(res[0].Marker.LeaseEnd) + 50*time.Millisecond)
	got := claim(t, s, "r2", slotstore.ClaimRequest{Job: job, Slot: slot, Lease: time.Minute, TakeoverOnly: true})
	if got[0].Status != slotstore.Abandoned || got[0].Marker.Reason != slotstore.ReasonDataLoss {
		t.Fatalf("takeover of a marker claimed before the generation: %v %+v; want abandoned for data loss", got[0].Status, got[0].Marker)
	}
}
