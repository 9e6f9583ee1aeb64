package engine

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// blindFeed is a store whose feed of schedule writes says nothing: a write
// it lost the index of, as a Redis Cluster can.
type blindFeed struct{ slotstore.Store }

func (b blindFeed) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	return slotstore.Changes{}, nil
}

// followEngine is an engine that runs schedules of job digest with rec.
func followEngine(t *testing.T, rec *recorder) *Engine {
	t.Helper()
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: time.Second,
		Lookup: func(name string) (jobs.Func, bool) { return rec.fn, name == "digest" }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runsOf counts rec's runs of id.
func runsOf(rec *recorder, id string) int {
	n := 0
	for _, r := range rec.snapshot() {
		if r.run.Job == id {
			n++
		}
	}
	return n
}

// TestFollowFullRead: a write the feed never tells of is taken in by the
// periodic read of every schedule.
func TestFollowFullRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSwapStore()
		rec := &recorder{}
		e := followEngine(t, rec)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: blindFeed{st}}) }()
		time.Sleep(time.Second)
		putSchedule(t, st, "late", "digest", "*/10 * * * * *", "")
		time.Sleep(time.Minute)
		if n := runsOf(rec, "late"); n != 0 {
			t.Fatalf("a schedule the feed did not tell of ran %d times within a minute", n)
		}
		time.Sleep(fullReadEvery)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if n := runsOf(rec, "late"); n == 0 {
			t.Fatalf("the schedule did not run after the full read")
		}
	})
}

// TestFollowStoreLoss: a store that lost its schedules (its feed's head
// falls below the replica's cursor) has the replica read every schedule
// again and drop those gone; one written anew runs.
func TestFollowStoreLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSwapStore()
		rec := &recorder{}
		e := followEngine(t, rec)
		putSchedule(t, st, "a", "digest", "* * * * * *", "")
		putSchedule(t, st, "b", "digest", "* * * * * *", "")
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(5 * time.Second)
		st.swap() // an empty store: its feed's head is 0
		putSchedule(t, st, "c", "digest", "* * * * * *", "")
		time.Sleep(5 * time.Second)
		lost := time.Now()
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		for _, r := range rec.snapshot() {
			if (r.run.Job == "a" || r.run.Job == "b") && r.run.Slot.After(lost) {
				t.Errorf("schedule %s, gone with the store, ran slot %s", r.run.Job, r.run.Slot)
			}
		}
		if runsOf(rec, "a") == 0 || runsOf(rec, "c") == 0 {
			t.Errorf("runs: a %d, c %d", runsOf(rec, "a"), runsOf(rec, "c"))
		}
		if _, ok := e.Job("a"); ok {
			t.Error("the replica still has schedule a")
		}
	})
}

// deleteOnEnroll deletes schedule id just before the first enrolment
// reaches the store: a delete made while a replica starts up.
type deleteOnEnroll struct {
	slotstore.Store
	id   string
	once chan struct{}
}

func (d deleteOnEnroll) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	select {
	case <-d.once:
	default:
		close(d.once)
		if _, err := d.Store.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "test",
			Writes: []slotstore.ScheduleWrite{{ID: d.id, Delete: true, IfVersion: slotstore.AnyVersion}}}); err != nil {
			return nil, err
		}
	}
	return d.Store.Enroll(ctx, p)
}

// TestFollowDeleteDuringStartup: a schedule deleted after a replica read
// it but before its enrolment runs no slot, and its name stays the
// schedules': it can be made anew.
func TestFollowDeleteDuringStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSwapStore()
		rec := &recorder{}
		e := followEngine(t, rec)
		putSchedule(t, st, "t1", "digest", "* * * * * *", "")
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() {
			ran <- e.Run(ctx, RunParams{Store: deleteOnEnroll{Store: st, id: "t1", once: make(chan struct{})}})
		}()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if n := runsOf(rec, "t1"); n != 0 {
			t.Errorf("the deleted schedule ran %d times", n)
		}
		es, err := st.Catalog(context.Background(), slotstore.CatalogParams{Jobs: []string{"t1"}})
		if err != nil || len(es) != 1 || !es[0].Deleted || es[0].Run != "digest" || len(es[0].Carriers) != 0 {
			t.Fatalf("the deleted schedule's entry: %+v %v", es, err)
		}
		putSchedule(t, st, "t1", "digest", "* * * * * *", "") // made anew
	})
}

// noWatch is a store without a watch of schedules: replicas learn of a
// write at their next poll.
type noWatch struct{ slotstore.Store }

// TestFollowFirstSlotAfterPut: a schedule put just before the first slot
// its record covers (slotstore.ClaimLead after the put), which comes due
// by the replica's next read of the feed, still runs that slot, and the
// next.
func TestFollowFirstSlotAfterPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSwapStore()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		rec := &recorder{}
		e := followEngine(t, rec)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: noWatch{st}}) }()
		time.Sleep(10*time.Second + 500*time.Millisecond) // polls at +2 s, +4 s ... +10 s; the next at +12 s
		put := time.Now()
		putSchedule(t, st, "soon", "digest", "* * * * * *", "")
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		first := put.Add(slotstore.ClaimLead).Add(time.Second - time.Nanosecond).Truncate(time.Second)
		var slots []time.Time
		for _, r := range rec.snapshot() {
			slots = append(slots, r.run.Slot)
		}
		if !slices.ContainsFunc(slots, first.Equal) || !slices.ContainsFunc(slots, first.Add(time.Second).Equal) {
			t.Fatalf("runs of slots %v; the first after the put, %s, and the next should be among them", slots, first)
		}
	})
}
