package engine

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// TestReload: a reload while Run goes on adds a job, removes one and
// reschedules one: from then on the removed job takes no slot, the
// rescheduled one takes its new schedule's slots only, the added one runs,
// the unchanged one runs on as before, and the removed job's slot running
// at the reload finishes.
func TestReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		long := func(ctx context.Context, _ jobs.Run) error {
			select {
			case <-time.After(3 * time.Second):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		mk := func(name, spec string, fn jobs.Func) JobSpec {
			j := job(name, fn)
			j.Schedule, j.Deadline = mustSchedule(t, spec), 5*time.Second
			return j
		}
		keep, moved, added := &recorder{}, &recorder{}, &recorder{}
		e := newEngine(t, mk("keep", "*/2 * * * * *", keep.fn), mk("moved", "*/3 * * * * *", moved.fn),
			mk("gone", "*/10 * * * * *", long))
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(11 * time.Second) // gone's slot of :10 runs until :13
		r, err := e.Reload(ctx, st, []JobSpec{mk("keep", "*/2 * * * * *", keep.fn), mk("moved", "*/5 * * * * *", moved.fn),
			mk("added", "*/4 * * * * *", added.fn)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		want := Reloaded{Added: []string{"added"}, Removed: []string{"gone"}, Changed: []string{"moved"}}
		if !slices.Equal(r.Added, want.Added) || !slices.Equal(r.Removed, want.Removed) || !slices.Equal(r.Changed, want.Changed) {
			t.Errorf("reload said %+v, want %+v", r, want)
		}
		time.Sleep(20 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		hist := func(job string) []slotstore.Marker {
			ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: job, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return ms
		}
		for _, m := range hist("gone") {
			if m.Slot.After(at) {
				t.Errorf("removed job took slot %s after the reload", m.Slot.Format(time.RFC3339))
			}
			if m.Slot.Second() == 10 && (m.State != slotstore.StateDone || m.Outcome != slotstore.Succeeded) {
				t.Errorf("the removed job's slot running at the reload ended %s %s, want done succeeded", m.State, m.Outcome)
			}
		}
		var movedAfter int
		for _, m := range hist("moved") {
			if m.Slot.After(at) {
				movedAfter++
				if m.Slot.Second()%5 != 0 {
					t.Errorf("rescheduled job took slot %s of its old schedule after the reload", m.Slot.Format(time.RFC3339))
				}
			}
		}
		if movedAfter < 3 || len(hist("added")) < 4 {
			t.Errorf("after the reload: %d slots of the rescheduled job, %d of the added one", movedAfter, len(hist("added")))
		}
		if n := len(hist("keep")); n < 14 {
			t.Errorf("the unchanged job has %d slots over 31 s of every 2 s", n)
		}
		if g := gaugeValue(e.metrics.specConflict.WithLabelValues("moved")); g != 0 {
			t.Errorf("the rescheduled job conflicts with itself: %v", g)
		}
	})
}
