package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// The store-wide scan pages through every running marker: a dead holder's
// slot is taken over by a replica that never saw it claimed even when more
// than one page of running markers are newer than it (guarantee 4).
func TestScanReadsPastOnePage(t *testing.T) {
	for _, tc := range []struct {
		busy     int
		takeover bool
	}{{busy: 100, takeover: true}, {busy: scanLimit + 10, takeover: true}} {
		t.Run(fmt.Sprint(tc.busy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, rec, reg := rig(&recorder{sleep: time.Second}, "victim")
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
				for i := 0; i < tc.busy; i += maxBatch {
					var reqs []slotstore.ClaimRequest
					for j := i; j < min(i+maxBatch, tc.busy); j++ {
						reqs = append(reqs, slotstore.ClaimRequest{Job: "busy", Slot: s0.Add(time.Duration(j+1) * time.Second),
							Lease: 10 * time.Hour, Retain: 20 * time.Hour})
					}
					if _, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "other", Incarnation: "y", Requests: reqs}); err != nil {
						t.Fatal(err)
					}
				}
				conf := `jobs: {victim: {schedule: "0 0 1 1 *", lease: 3s}}`
				stop := start(t, replica(t, st, "b", conf, reg))
				time.Sleep(3 * time.Minute) // three scans
				stop()
				m, _ := findMarker(st, "victim", s0)
				took := len(rec.snapshot()) > 0
				if took != tc.takeover {
					t.Errorf("with %d newer running markers: dead holder's slot taken over: %v (marker %s by %s attempt %d)",
						tc.busy, took, m.State, m.Holder, m.Attempt)
				}
			})
		})
	}
}

// pausesDown fails every read of the pauses at once (a store that refuses
// connections) and counts them.
type pausesDown struct {
	slotstore.Store
	n atomic.Int64
}

func (s *pausesDown) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	s.n.Add(1)
	return slotstore.Pauses{}, errors.New("test: connection refused")
}

// A store whose reads of the pauses fail at once is asked again at the
// pace of the slots' backoff, not in a tight loop ahead of every slot.
func TestFailingPauseReadsBackOff(t *testing.T) {
	st, _, reg := rig(&recorder{}, "tick")
	down := &pausesDown{Store: st}
	conf := `jobs: {tick: {schedule: "* * * * * *", lease: 3s}}`
	stop := start(t, replica(t, down, "a", conf, reg))
	time.Sleep(3 * time.Second)
	stop()
	// The slots of 3 s, each put back with backoff (250 ms, 500 ms, ...)
	// when the read fails: a few dozen reads at most are needed.
	n := down.n.Load()
	t.Logf("%d reads of the pauses in 3 s against a failing store", n)
	if n > 20 { // backoff from 250 ms doubling allows 4; the tight loop made 200k
		t.Errorf("%d reads of the pauses in 3 s against a failing store", n)
	}
}

// skipProbe measures the live heap at the first Skip call.
type skipProbe struct {
	slotstore.Store
	once sync.Once
	heap uint64
}

func (s *skipProbe) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	s.once.Do(func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.heap = ms.HeapAlloc
	})
	return s.Store.Skip(ctx, p)
}

// Start-up sends the missed-slot records of its jobs as they fill a batch,
// rather than holding every job's (up to maxMissedRecords each) at once:
// 300 jobs here, each down for 2,000 slots.
func TestStartupSendsMissedSlotsInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		var names []string
		var b strings.Builder
		b.WriteString("jobs:\n")
		for i := range n {
			name := fmt.Sprintf("j%03d", i)
			names = append(names, name)
			fmt.Fprintf(&b, "  %s: {schedule: \"@every 1s\"}\n", name)
		}
		st, _, reg := rig(&recorder{}, names...)
		ctx := context.Background()
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: names}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		s0 := time.Now().Truncate(time.Second)
		var reqs []slotstore.SkipRequest
		for _, name := range names {
			reqs = append(reqs, slotstore.SkipRequest{Job: name, Slot: s0, Reason: "test", Retain: 24 * time.Hour})
		}
		if _, err := st.Skip(ctx, slotstore.SkipParams{Replica: "x", Requests: reqs}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2000 * time.Second) // every job missed > 1000 slots
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		probe := &skipProbe{Store: st}
		stop := start(t, replica(t, probe, "a", b.String(), reg))
		time.Sleep(time.Second)
		stop()
		grew := int64(probe.heap) - int64(base)
		t.Logf("live heap at the first Skip call: +%d MB", grew>>20)
		if grew > 10<<20 {
			t.Errorf("start-up held %d MB of skip requests before sending the first", grew>>20)
		}
	})
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
	st, rec, _ := rig(&recorder{}, "b", other)
	ctx := context.Background()
	time.Sleep(time.Hour)
	d := deadHolder{slot: time.Now().Truncate(time.Second), rec: rec, runs: &sync.WaitGroup{}}
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"b", other}}); err != nil {
		t.Fatal(err)
	}
	if rs, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "dead", Requests: []slotstore.ClaimRequest{
		{Job: "b", Slot: d.slot, Lease: 3 * time.Second, Retain: time.Hour}}}); err != nil || rs[0].Status != slotstore.Won {
		t.Fatalf("claim: %+v %v", rs, err)
	}
	time.Sleep(4 * time.Second) // the dead holder's lease ended
	mk := func(name string) *plan {
		return &plan{name: name, fn: rec.fn, lease: 3 * time.Second, timeout: time.Minute, deadline: time.Minute, history: time.Hour}
	}
	d.b, d.other = mk("b"), mk(other)
	s := &Scheduler{store: wrap(st), replica: "a", log: testLogger(), now: time.Now, metrics: newMetrics(MetricsConfig{}),
		plans: []*plan{d.b, d.other}, byName: map[string]*plan{"b": d.b, other: d.other}}
	d.l = newLoop(s, ctx, d.runs)
	return d
}

// tookOver checks that the one run was b's takeover, started within 100 ms
// of start.
func (d deadHolder) tookOver(t *testing.T, start time.Time, why string) {
	t.Helper()
	d.runs.Wait()
	evs := d.rec.snapshot()
	if len(evs) != 1 || evs[0].run.Job != "b" || evs[0].run.Attempt != 2 {
		t.Fatalf("runs %+v, want the takeover of b alone", evs)
	}
	if took := evs[0].started.Sub(start); took > 100*time.Millisecond {
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
