package otlp_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// The IDs of a run's span are derived in its cluster: two replicas of one
// cluster derive the same IDs for a slot, another cluster exporting to the
// same backend other IDs. Each replica here has a store of its own, so
// each runs the slot.
func TestClusterNamesRunIDs(t *testing.T) {
	rcv := newReceiver(t)
	// A slot the job's new record covers (slotstore.ClaimLead after it began).
	slot := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	ran := make(chan struct{}, 3)
	reg := jobs.NewRegistry()
	reg.Register("nightly", func(context.Context, jobs.Run) error { ran <- struct{}{}; return nil })
	var stops []func()
	for _, r := range []struct{ replica, cluster string }{{"a", "prod"}, {"b", "prod"}, {"c", "staging"}} {
		doc := fmt.Sprintf("tracing: {otlp: {endpoint: %s}, cluster: %s}\njobs:\n  nightly: {schedule: \"%d %d %d * * *\"}\n",
			rcv.srv.URL, r.cluster, slot.Second(), slot.Minute(), slot.Hour())
		stops = append(stops, start(t, doc, r.replica, reg, memstore.New(memstore.Options{})))
	}
	for range 3 {
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("a replica did not run the slot")
		}
	}
	for _, stop := range stops {
		stop() // flushes its spans
	}
	by := map[string]span{}
	for _, s := range rcv.named("slotcron.run") {
		by[s.replica] = s
	}
	a, b, c := by["a"], by["b"], by["c"]
	if a.Span == nil || b.Span == nil || c.Span == nil {
		t.Fatalf("run spans by replica: %v", by)
	}
	if !bytes.Equal(a.GetTraceId(), b.GetTraceId()) || !bytes.Equal(a.GetSpanId(), b.GetSpanId()) {
		t.Errorf("two replicas of cluster prod derived other IDs for the slot: %x/%x and %x/%x",
			a.GetTraceId(), a.GetSpanId(), b.GetTraceId(), b.GetSpanId())
	}
	if bytes.Equal(a.GetTraceId(), c.GetTraceId()) || bytes.Equal(a.GetSpanId(), c.GetSpanId()) {
		t.Errorf("clusters prod and staging share IDs for the slot: %x/%x and %x/%x",
			a.GetTraceId(), a.GetSpanId(), c.GetTraceId(), c.GetSpanId())
	}
}
