package scheduler

import (
	"context"
	"testing"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A schedule read and written back is the same schedule, however the
// writer's defaults differ from what it holds: no calendar stays none, the
// default DST rule stays the default.
func TestScheduleReadBackKeepsCalendarsAndDST(t *testing.T) {
	reg := jobs.NewRegistry()
	reg.Register("digest", func(context.Context, jobs.Run) error { return nil })
	cfg, err := Parse("test.yaml", []byte("calendars: {holidays: {dates: [2026-12-25]}}\ndefaults: {except: [holidays], dst: {gap: skip}}"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSchedules(memstore.New(memstore.Options{}), cfg, reg).By("test")
	ctx := context.Background()
	for _, sc := range []Schedule{
		{ID: "none", Job: "digest", Schedule: "30 2 * * *", Policy: Policy{Except: []string{}}},
		{ID: "shift", Job: "digest", Schedule: "30 2 * * *", Policy: Policy{DST: DST{Gap: policy.GapShift}}},
	} {
		if _, err := s.Put(ctx, sc); err != nil {
			t.Fatalf("put %s: %v", sc.ID, err)
		}
		got, err := s.Get(ctx, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.Put(ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if again.Version != 1 {
			t.Errorf("%s: read and put back, it changed to version %d: except %v, dst %+v", sc.ID, again.Version,
				again.Policy.Except, again.Policy.DST)
		}
	}
}
