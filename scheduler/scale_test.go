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
