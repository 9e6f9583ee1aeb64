package etcdstore_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// TestWipedPrefix: when every key under the prefix is deleted, the next
// claim begins a new generation, so a slot that ran before is skipped for
// data loss, not run again; and fences, revisions of the cluster, keep
// growing.
func TestWipedPrefix(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	gens, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"w"}})
	if err != nil {
		t.Fatal(err)
	}
	// The job's first slot its generation covers, claimed when it comes
	// due (NotBefore at the slot), as a replica claims it.
	r := slotstore.ClaimRequest{Job: "w", Slot: gens[0].From().UTC().Add(time.Second - time.Nanosecond).Truncate(time.Second),
		Lease: time.Minute}
	r.NotBefore = r.Slot
	var first slotstore.ClaimResult
	poll.Until(t, 10*time.Second, "the slot to come due", func() error {
		if first = claim(t, s, "r", r)[0]; first.Status == slotstore.NotYet {
			return fmt.Errorf("not yet, %v to go", first.Remaining)
		}
		return nil
	})
	if first.Status != slotstore.Won {
		t.Fatalf("claim: %+v", first)
	}
	if err := s.Finish(ctx, slotstore.FinishParams{Ref: first.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Delete(ctx, s.Prefix(), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	again := claim(t, s, "r", r)[0]
	if again.Status != slotstore.Skipped || again.Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("claim of the finished slot after the wipe: %v %+v, want skipped for data loss", again.Status, again.Marker)
	}
	gen, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"w"}})
	if err != nil {
		t.Fatal(err)
	}
	if !gen[0].Born.After(r.Slot) {
		t.Errorf("generation after the wipe born %v, want after the slot %v", gen[0].Born, r.Slot)
	}
	later := claim(t, s, "r", slotstore.ClaimRequest{Job: "w", Slot: nextHour(), Lease: time.Minute})[0]
	if later.Status != slotstore.Won || later.Claim.Fence <= first.Claim.Fence {
		t.Errorf("claim after the wipe: %v fence %d, want won above fence %d", later.Status, later.Claim.Fence, first.Claim.Fence)
	}
	// History of every job finds the job again (its job key came back).
	if ms, err := s.History(ctx, slotstore.HistoryParams{}); err != nil || len(ms) != 2 {
		t.Errorf("history after the wipe: %+v, %v; want the skipped and the new slot", ms, err)
	}
}

// TestRestoredElsewhere: keys recorded as written in another cluster (a
// snapshot restored into a new one) lose their generations when a store
// opens on them, so every job begins a new one; a store opened after
// that changes nothing.
func TestRestoredElsewhere(t *testing.T) {
	c := sharedEtcd(t)
	prefix := freshPrefix()
	ctx := t.Context()
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	gen, _ := json.Marshal(map[string]time.Time{"born": old})
	if _, err := cl.Put(ctx, prefix+"cluster", `{"id":"deadbeef"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, prefix+"gen/j", string(gen)); err != nil {
		t.Fatal(err)
	}
	s := openWith(t, etcdstore.Options{Prefix: prefix})
	g, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}})
	if err != nil {
		t.Fatal(err)
	}
	if !g[0].Born.After(old) {
		t.Errorf("generation born %v, want a new one", g[0].Born)
	}
	resp, err := cl.Get(ctx, prefix+"cluster")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("cluster record: %v, %v", resp, err)
	}
	var rec struct {
		ID        string `json:"id"`
		FenceBase int64  `json:"fence_base"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil || rec.ID != fmt.Sprintf("%x", resp.Header.ClusterId) ||
		rec.FenceBase < time.Now().Add(-time.Minute).UnixMicro() {
		t.Errorf("cluster record %s (%v), want this cluster's ID and a fence base of the store's clock", resp.Kvs[0].Value, err)
	}
	openWith(t, etcdstore.Options{Prefix: prefix})
	if g2, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil || !g2[0].Born.Equal(g[0].Born) {
		t.Errorf("generation after a second store opened: %+v, %v; want %v", g2, err, g[0].Born)
	}
}
