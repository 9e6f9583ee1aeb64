package engine

import (
	"fmt"
	"testing"

	"github.com/slotcron/slotcron/slotstore"
)

// heldSet is a set of n schedule plans.
func heldSet(n int) *planSet {
	repl := make(map[string]*plan, n)
	for i := range n {
		name := fmt.Sprintf("tenant-%06d", i)
		repl[name] = &plan{name: name, run: "digest"}
	}
	s, _ := newPlanSet(nil, 0, nil)
	s, _, _ = s.withSchedules(repl)
	return s
}

// TestPlanSetShards: a change replaces, adds and removes schedules in a
// new set and leaves the set it came from as it was; a job of the
// configuration shadows a schedule of its name.
func TestPlanSetShards(t *testing.T) {
	s := heldSet(1000)
	repl := map[string]*plan{"tenant-000001": nil, "tenant-000002": {name: "tenant-000002", run: "other"}, "new": {name: "new", run: "digest"}}
	next, fresh, gone := s.withSchedules(repl)
	if next.nHeld != 1000 || len(fresh) != 2 || len(gone) != 2 {
		t.Fatalf("after the change: %d held, %d fresh, %d gone", next.nHeld, len(fresh), len(gone))
	}
	if next.plan("tenant-000001") != nil || next.plan("tenant-000002").run != "other" || next.plan("new") == nil {
		t.Fatal("the change is not in the new set")
	}
	if s.nHeld != 1000 || s.plan("tenant-000001") == nil || s.plan("tenant-000002").run != "digest" || s.plan("new") != nil {
		t.Fatal("the change leaked into the set it came from")
	}
	if n := len(next.schedules()); n != 1000 {
		t.Fatalf("%d schedules listed, want 1000", n)
	}
	j := job("new", nil)
	withJob, shadowed := next.withConfig([]*plan{newPlan(j, slotstore.Spec{Fingerprint: "f"})}, 0)
	if len(shadowed) != 1 || withJob.plan("new").run != "" || withJob.nHeld != 999 || next.plan("new").run != "digest" {
		t.Fatalf("a job of the configuration named like a schedule: shadowed %d, %d held", len(shadowed), withJob.nHeld)
	}
}

// BenchmarkScheduleChange is the cost of taking in one changed schedule
// among 100,000: a new set with one shard copied.
func BenchmarkScheduleChange(b *testing.B) {
	s := heldSet(100000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("tenant-%06d", i%100000)
		s, _, _ = s.withSchedules(map[string]*plan{name: {name: name, run: "digest"}})
	}
}
