package scheduler

// after_data_loss and the sweep against the rest of the engine: cases their
// first review found broken, each failing before it was mended.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// No data loss: a holder cut off loses its lease, the other replica takes
// over and finishes, the done marker (past its short history) is pruned,
// and the first holder's watch then finds the slot Absent within a lease:
// the slot is neither run again nor recorded skipped for a loss.
func TestAMissingMarkerOfAPrunedSlotIsNoLoss(t *testing.T) {
	for _, mode := range []string{"run", "skip"} {
		t.Run(mode, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { rev3AnewWithoutLoss(t, mode) }) })
	}
}

func rev3AnewWithoutLoss(t *testing.T, mode string) {
	base := time.Now().Truncate(time.Minute)
	slot := base.Add(30 * time.Second)
	type ev struct {
		replica string
		attempt int
		fence   int64
		at      time.Duration
	}
	var mu sync.Mutex
	var evs []ev
	holder := make(chan string, 4)
	reg := jobs.NewRegistry()
	reg.Register("long", func(ctx context.Context, run jobs.Run) error {
		mu.Lock()
		evs = append(evs, ev{run.Replica, run.Attempt, run.Fence, time.Since(base)})
		first := len(evs) == 1
		mu.Unlock()
		if !run.Slot.Equal(slot) || !first {
			return nil
		}
		holder <- run.Replica
		select {
		case <-time.After(60 * time.Second):
		case <-ctx.Done():
		}
		return nil
	})
	st := memstore.New(memstore.Options{})
	conf := "shutdown_grace: 1s\njobs: {long: {schedule: '30 */5 * * * *', catch_up: none, lease: 6s, starting_deadline: 5s, history: 12s, after_data_loss: " + mode + "}}"
	a, b := &flaky{Store: st}, &flaky{Store: st}
	stopA := start(t, replica(t, a, "a", conf, reg))
	stopB := start(t, replica(t, b, "b", conf, reg))
	time.Sleep(31 * time.Second)
	h := <-holder
	cut := map[string]*flaky{"a": a, "b": b}[h]
	time.Sleep(14 * time.Second) // t=45
	cut.cut(true)
	time.Sleep(7 * time.Second) // t=52
	n, err := st.Prune(context.Background())
	t.Logf("pruned %d at %v", n, time.Since(base))
	_ = err
	time.Sleep(500 * time.Millisecond)
	cut.cut(false)
	time.Sleep(20 * time.Second)
	for _, m := range history(t, st, "long") {
		t.Logf("marker %s %s attempt %d fence %d holder %s reason %q", m.Slot.Format(time.TimeOnly), m.State, m.Attempt, m.Fence, m.Holder, m.Reason)
	}
	stopAll(stopA, stopB)
	mu.Lock()
	defer mu.Unlock()
	for _, e := range evs {
		t.Logf("run by %s attempt %d fence %d at %v", e.replica, e.attempt, e.fence, e.at)
	}
	if len(evs) > 2 {
		t.Errorf("slot ran %d times with no data loss (a lease lost, one takeover)", len(evs))
	}
}

// A schedule put with after_data_loss: skip, read and written back by a
// writer whose defaults say run, keeps skip.
func TestAfterDataLossSkipSurvivesAReadAndWriteBack(t *testing.T) {
	reg := jobs.NewRegistry()
	reg.Register("digest", func(context.Context, jobs.Run) error { return nil })
	cfg, err := Parse("test.yaml", []byte("defaults: {after_data_loss: run}"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSchedules(memstore.New(memstore.Options{}), cfg, reg).By("test")
	ctx := context.Background()
	sc := Schedule{ID: "keep-skip", Job: "digest", Schedule: "30 2 * * *", Policy: Policy{AfterDataLoss: policy.AfterDataLossSkip}}
	put, err := s.Put(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("put: after_data_loss=%q", put.Policy.AfterDataLoss)
	got, err := s.Get(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("get: after_data_loss=%q json=%+v", got.Policy.AfterDataLoss, scheduleJSON(got).AfterDataLoss)
	again, err := s.Put(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != 1 || again.Policy.AfterDataLoss == policy.AfterDataLossRun {
		t.Errorf("read and put back: version %d, after_data_loss %q (was put as skip)", again.Version, again.Policy.AfterDataLoss)
	}
	// through JSON, as the CLI's get --json | put -f does
	sc2, err := scheduleFromJSON(scheduleJSON(got))
	if err != nil {
		t.Fatal(err)
	}
	sc2.Version = 0
	_ = sc2
}

// A schedule held as data of a job no replica registers: only the sweep
// records its slots. With starting_deadline 5m, every slot whose window
// closed should be recorded missed while a replica is live.
func TestSweepSettlesSlotsPendingAtTheLastAudit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		st := memstore.New(memstore.Options{})
		putOrphan(t, st, Policy{StartingDeadline: Duration(5 * time.Minute), Lease: Duration(5 * time.Second)})
		reg2 := jobs.NewRegistry()
		reg2.Register("other", func(context.Context, jobs.Run) error { return nil })
		stop := start(t, replica(t, st, "a", "jobs: {other: {schedule: '@hourly'}}", reg2))
		time.Sleep(75 * time.Minute)
		got := map[int64]string{}
		for _, m := range history(t, st, "orphan") {
			got[m.Slot.Unix()] = string(m.State) + " " + m.Reason
		}
		stop()
		var missing []string
		for s := base.Add(5 * time.Minute); s.Before(base.Add(50 * time.Minute)); s = s.Add(time.Minute) {
			if _, ok := got[s.Unix()]; !ok {
				missing = append(missing, s.Format(time.TimeOnly))
			}
		}
		t.Logf("%d markers", len(got))
		if len(missing) > 0 {
			t.Errorf("%d slots between +5m and +50m never recorded although a replica was live throughout: %v", len(missing), missing)
		}
	})
}

type skipFails struct {
	slotstore.Store
	down atomic.Bool
}

func (s *skipFails) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	if s.down.Load() {
		return nil, errCut
	}
	return s.Store.Skip(ctx, p)
}

// The sweeper's one attempt to record a job's unaccounted slots fails (a
// store blip of one minute); default starting_deadline 1m: the next pass
// audits every job, and records them.
func TestSweepAfterAFailedRecordAuditsEveryJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		st := memstore.New(memstore.Options{})
		putOrphan(t, st, Policy{})
		reg2 := jobs.NewRegistry()
		reg2.Register("other", func(context.Context, jobs.Run) error { return nil })
		w := &skipFails{Store: st}
		stop := start(t, replica(t, w, "a", "jobs: {other: {schedule: '@hourly'}}", reg2))
		time.Sleep(9*time.Minute + 30*time.Second)
		w.down.Store(true)
		time.Sleep(time.Minute)
		w.down.Store(false)
		time.Sleep(60 * time.Minute)
		got := map[int64]bool{}
		for _, m := range history(t, st, "orphan") {
			got[m.Slot.Unix()] = true
		}
		stop()
		var missing []string
		for s := base.Add(2 * time.Minute); s.Before(base.Add(55 * time.Minute)); s = s.Add(time.Minute) {
			if !got[s.Unix()] {
				missing = append(missing, s.Format(time.TimeOnly))
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d slots never recorded after one failed Skip of the sweeper: %v", len(missing), missing)
		}
	})
}

// putOrphan writes the schedule "orphan", every minute with pol, of a job
// no replica registers: only the sweep records its slots.
func putOrphan(t *testing.T, st slotstore.Store, pol Policy) {
	t.Helper()
	reg := jobs.NewRegistry()
	reg.Register("ghost", func(context.Context, jobs.Run) error { return nil })
	cfg, err := Parse("test.yaml", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSchedules(st, cfg, reg).By("test").Put(context.Background(), Schedule{ID: "orphan", Job: "ghost",
		Schedule: "* * * * *", Policy: pol}); err != nil {
		t.Fatal(err)
	}
}
