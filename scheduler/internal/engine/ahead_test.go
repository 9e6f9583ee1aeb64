package engine

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A slot of a job with overlap allow is claimed ahead of its instant, by
// claimAhead (at most a quarter of its lease), and its run starts at the
// slot's instant exactly, jitter included; a job whose claim is judged
// against its other runs (forbid) is claimed at the instant.
func TestClaimedAheadStartsAtTheInstant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		overlap policy.Overlap
		lease   time.Duration
		jitter  time.Duration
		ahead   time.Duration
	}{
		{"allow", policy.OverlapAllow, 3 * time.Second, 0, claimAhead},
		{"allow, short lease", policy.OverlapAllow, time.Second, 0, time.Second / 4},
		{"allow, jitter", policy.OverlapAllow, 3 * time.Second, 300 * time.Millisecond, claimAhead},
		{"forbid", policy.OverlapForbid, 3 * time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				j := job("j", rec.fn)
				j.Schedule, j.Lease, j.Overlap, j.Jitter = mustSchedule(t, "@every 2s"), tc.lease, tc.overlap, tc.jitter
				e := newEngine(t, j)
				st := memstore.New(memstore.Options{})
				runAWhile(t, e, st, 9*time.Second)
				runs := rec.snapshot()
				if len(runs) < 3 {
					t.Fatalf("%d runs in 9 s of a job every 2 s", len(runs))
				}
				m, err := st.History(context.Background(), slotstore.HistoryParams{Job: "j", Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range runs {
					if want := r.run.Slot.Add(tc.jitter); !r.at.Equal(want) {
						t.Errorf("slot %s started at %s, want %s", r.run.Slot.Format(time.TimeOnly),
							r.at.Format("15:04:05.000000"), want.Format("15:04:05.000000"))
					}
					for _, mk := range m {
						if mk.Slot.Equal(r.run.Slot) && !mk.ClaimedAt.Equal(r.run.Slot.Add(tc.jitter-tc.ahead)) {
							t.Errorf("slot %s claimed at %s, want %v before it starts", r.run.Slot.Format(time.TimeOnly),
								mk.ClaimedAt.Format("15:04:05.000"), tc.ahead)
						}
					}
				}
			})
		})
	}
}

// A replica stopped between a claim made ahead and the slot's instant
// still starts the run at the instant, in the shutdown's grace, and records
// it: a claim released unstarted would be a marker no window binds.
func TestStoppedBeforeTheInstantStillRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot, runs, last := stopBeforeTheInstant(t, time.Second)
		if len(runs) != 1 || !runs[0].run.Slot.Equal(slot) || !runs[0].at.Equal(slot) {
			t.Errorf("runs %+v, want slot %s started at its instant", runs, slot.Format(time.TimeOnly))
		}
		if !last.Slot.Equal(slot) || last.State != slotstore.StateDone {
			t.Fatalf("last marker %+v, want slot %s done", last, slot.Format(time.TimeOnly))
		}
	})
}

// A replica whose shutdown grace ends before a slot it claimed ahead comes
// due never calls the job: the slot is released, for another replica to take
// over.
func TestGraceEndingBeforeTheInstantReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot, runs, last := stopBeforeTheInstant(t, claimAhead/4)
		if len(runs) != 0 {
			t.Errorf("runs %+v, want none: the grace ended before the instant", runs)
		}
		if !last.Slot.Equal(slot) || last.State != slotstore.StateReleased {
			t.Fatalf("last marker %+v, want slot %s released", last, slot.Format(time.TimeOnly))
		}
	})
}

// stopBeforeTheInstant runs a job every 10 s under grace and stops it
// between the claim of the slot at 10 s and its instant; it returns that
// slot, the runs, and the job's last marker.
func stopBeforeTheInstant(t *testing.T, grace time.Duration) (time.Time, []started, slotstore.Marker) {
	rec := &recorder{}
	j := job("j", rec.fn)
	j.Schedule = mustSchedule(t, "@every 10s")
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: testLogger(), Now: time.Now, Grace: grace, Jobs: []JobSpec{j}})
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
	time.Sleep(10*time.Second - claimAhead/2)
	synctest.Wait()
	slot := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "j", Limit: 10})
	if err != nil || len(ms) == 0 {
		t.Fatalf("history %+v, %v", ms, err)
	}
	return slot, rec.snapshot(), ms[0]
}

// answerAfter is a store whose claims' answers leave it batch after their
// decisions, as a long batch's do (the rest of the batch decided and
// written meanwhile): it tells the answer's time when tell is set, and
// leaves it untold otherwise.
type answerAfter struct {
	slotstore.Store
	batch time.Duration
	tell  bool
}

func (s answerAfter) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, p)
	time.Sleep(s.batch)
	for i := range res {
		res[i].Answered = time.Time{}
		if s.tell {
			// Each result read a microsecond after the one before, as
			// a store that answers in parts, or reads its clock a row,
			// tells them.
			res[i].Answered = time.Now().Add(time.Duration(i-len(res)) * time.Microsecond)
		}
	}
	return res, err
}

// A run claimed ahead counts its wait for the instant from the store's
// answer, when the store tells its time, not from its decision: the rest
// of a long batch does not make it late. Untold, it starts the batch's
// time after the instant, never before it. An answer's runs of one
// instant start together, on one gate, though its results tell times a
// microsecond apart: from the earliest.
func TestALongBatchStartsAtTheInstant(t *testing.T) {
	const batch = 40 * time.Millisecond
	for _, tell := range []bool{true, false} {
		t.Run(fmt.Sprintf("told %v", tell), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				var specs []JobSpec
				for _, name := range []string{"a", "b", "c"} {
					j := job(name, rec.fn)
					j.Schedule, j.Lease = mustSchedule(t, "@every 2s"), 3*time.Second
					specs = append(specs, j)
				}
				e := newEngine(t, specs...)
				runAWhile(t, e, answerAfter{Store: memstore.New(memstore.Options{}), batch: batch, tell: tell}, 9*time.Second)
				runs := rec.snapshot()
				if len(runs) < 9 {
					t.Fatalf("%d runs in 9 s of three jobs every 2 s", len(runs))
				}
				late := time.Duration(0)
				if !tell {
					late = batch
				} else {
					late = 3 * time.Microsecond // the earliest of three results' times
				}
				for _, r := range runs {
					if want := r.run.Slot.Add(late); !r.at.Equal(want) {
						t.Errorf("slot %s started at %s, want %s", r.run.Slot.Format(time.TimeOnly),
							r.at.Format("15:04:05.000000"), want.Format("15:04:05.000000"))
					}
				}
			})
		})
	}
}

// runAWhile runs e on st for d, then stops it and waits for Run to return.
func runAWhile(t *testing.T, e *Engine, st slotstore.Store, d time.Duration) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
	time.Sleep(d)
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}
