package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

func mustSchedule(t *testing.T, spec string) *schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A watched slot whose marker disappeared (pruned) is never claimed as new.
func TestWatchNeverRecreatesMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec := memstore.New(memstore.Options{}), &recorder{}
		e := newEngine(t, job("j", rec.fn))
		var runs sync.WaitGroup
		l := newLoop(e, st, context.Background(), &runs)
		l.claimAll(context.Background(), []*entry{{p: e.jobs().plans[0], slot: time.Now().Truncate(time.Second), kind: watch}})
		runs.Wait()
		if runs := rec.snapshot(); len(runs) != 0 {
			t.Fatalf("a watch ran a slot with no marker: %+v", runs)
		}
		if hist, _ := st.History(context.Background(), slotstore.HistoryParams{}); len(hist) != 0 {
			t.Fatalf("a watch created markers: %+v", hist)
		}
	})
}

// The store-wide scan pages through every running marker: a dead holder's
// slot is taken over by a replica that never saw it claimed even when more
// than one page of running markers are newer than it (guarantee 4).
func TestScanReadsPastOnePage(t *testing.T) {
	for _, busy := range []int{100, scanLimit + 10} {
		t.Run(fmt.Sprint(busy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, rec := memstore.New(memstore.Options{}), &recorder{}
				ctx := context.Background()
				time.Sleep(time.Hour) // no slot of the yearly schedule is near
				if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"victim", "busy"}}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				s0 := time.Now().Truncate(time.Second)
				rs, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "dead", Incarnation: "x", Requests: []slotstore.ClaimRequest{
					{Job: "victim", Slot: s0, Lease: 3 * time.Second, Retain: time.Hour},
				}})
				if err != nil || rs[0].Status != slotstore.Won {
					t.Fatalf("claim victim: %v %+v", err, rs)
				}
				// Another service's (or this one's) live runs, all newer.
				for i := 0; i < busy; i += maxBatch {
					var reqs []slotstore.ClaimRequest
					for j := i; j < min(i+maxBatch, busy); j++ {
						reqs = append(reqs, slotstore.ClaimRequest{Job: "busy", Slot: s0.Add(time.Duration(j+1) * time.Second),
							Lease: 10 * time.Hour, Retain: 20 * time.Hour})
					}
					if _, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "other", Incarnation: "y", Requests: reqs}); err != nil {
						t.Fatal(err)
					}
				}
				victim := job("victim", rec.fn)
				victim.Schedule = mustSchedule(t, "0 0 1 1 *")
				e := newEngine(t, victim)
				runCtx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Go(func() {
					if err := e.Run(runCtx, RunParams{Store: st}); err != nil {
						t.Errorf("Run: %v", err)
					}
				})
				time.Sleep(3 * time.Minute) // three scans
				stop()
				wg.Wait()
				if runs := rec.snapshot(); len(runs) != 1 || runs[0].run.Job != "victim" || runs[0].run.Attempt != 2 {
					hist, _ := st.History(ctx, slotstore.HistoryParams{Job: "victim"})
					t.Errorf("with %d newer running markers: runs %+v, want the dead holder's slot taken over (history %+v)",
						busy, runs, hist)
				}
			})
		})
	}
}

// stuckClaims holds every claim of new slots until its context ends, as a
// store waiting for a row another transaction locked (CompleteTx) would;
// takeovers pass.
type stuckClaims struct{ slotstore.Store }

func (s stuckClaims) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	for _, r := range p.Requests {
		if !r.TakeoverOnly {
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	return s.Store.Claim(ctx, p)
}

// deadHolder is a loop of replica "a" over st wrapped by wrap, with two
// jobs: "b", whose slot a dead replica claimed and whose lease has ended,
// and other. Call it in a synctest bubble.
type deadHolder struct {
	l        *loop
	b, other *plan
	slot     time.Time // b's slot, to take over
	rec      *recorder
	runs     *sync.WaitGroup
}

func newDeadHolder(t *testing.T, other string, wrap func(slotstore.Store) slotstore.Store) deadHolder {
	t.Helper()
	st := memstore.New(memstore.Options{})
	ctx := context.Background()
	time.Sleep(time.Hour)
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"b", other}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(slotstore.ClaimLead) // to the first slot the generation covers
	d := deadHolder{slot: time.Now().Truncate(time.Second), rec: &recorder{}, runs: &sync.WaitGroup{}}
	if rs, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "dead", Requests: []slotstore.ClaimRequest{
		{Job: "b", Slot: d.slot, Lease: 3 * time.Second, Retain: time.Hour}}}); err != nil || rs[0].Status != slotstore.Won {
		t.Fatalf("claim: %+v %v", rs, err)
	}
	time.Sleep(4 * time.Second) // the dead holder's lease ended
	e := newEngine(t, job("b", d.rec.fn), job(other, d.rec.fn))
	d.b, d.other = e.jobs().plans[0], e.jobs().plans[1]
	d.l = newLoop(e, wrap(st), ctx, d.runs)
	return d
}

// tookOver checks that the one run was b's takeover, started within 100 ms
// of start.
func (d deadHolder) tookOver(t *testing.T, start time.Time, why string) {
	t.Helper()
	d.runs.Wait()
	runs := d.rec.snapshot()
	if len(runs) != 1 || runs[0].run.Job != "b" || runs[0].run.Attempt != 2 {
		t.Fatalf("runs %+v, want the takeover of b alone", runs)
	}
	if took := runs[0].at.Sub(start); took > 100*time.Millisecond {
		t.Errorf("the takeover started %v after it was due: %s", took, why)
	}
}

// A takeover due with new slots is claimed in a call of its own and starts
// at once, not when a store stuck on the new slots gives up.
func TestTakeoverNotHeldBehindNewSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDeadHolder(t, "locked", func(st slotstore.Store) slotstore.Store { return stuckClaims{st} })
		start := time.Now()
		d.l.claimAll(context.Background(), []*entry{{p: d.b, slot: d.slot, kind: watch},
			{p: d.other, slot: time.Now().Truncate(time.Second), kind: fire}})
		d.tookOver(t, start, "it waited for the stuck claim of new slots")
	})
}

// hungPauses never answers a read of the pauses before its context ends.
type hungPauses struct{ slotstore.Store }

func (s hungPauses) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	<-ctx.Done()
	return slotstore.Pauses{}, ctx.Err()
}

// A store slow to answer a read of the pauses holds up only the new slots
// that need it: a takeover due at the same wake goes on at once.
func TestSlowPauseReadHoldsUpNoTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDeadHolder(t, "tick", func(st slotstore.Store) slotstore.Store { return hungPauses{st} })
		now := time.Now()
		d.l.push(&entry{p: d.b, slot: d.slot, kind: watch}, now)
		d.l.push(&entry{p: d.other, slot: now.Truncate(time.Second), kind: retry}, now)
		d.l.wake(context.Background())
		d.tookOver(t, now, "it waited for the pauses") // tick waits for them
		d.l.bg.Wait()                                  // the read under way ends with its timeout
	})
}
