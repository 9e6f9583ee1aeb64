package scheduler

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// TestQueueOnEveryStore: overlap queue on SQLite, Redis, Postgres and etcd,
// three replicas, a 5 s job every 2 s. Never two runs at once; no slot both
// run and skipped; every slot that waited starts as its predecessor ends,
// on whichever replica, and the one it replaced is recorded skipped
// (overlap). How soon after is logged: a bound on a shared machine is
// asserted loosely, at half the lease/3 (2 s) at which the other replicas
// look again: only the claim made as the run ends meets it.
func TestQueueOnEveryStore(t *testing.T) {
	onSharedStores(t, queueOnStore)
}

func queueOnStore(t *testing.T, open func() slotstore.Store) {
	rec := &recorder{sleep: 5 * time.Second}
	reg := jobs.NewRegistry()
	reg.Register("slow", rec.fn)
	const doc = "shutdown_grace: 6s\njobs: {slow: {schedule: '*/2 * * * * *', overlap: queue, lease: 6s, starting_deadline: 10s, catch_up: none}}"
	var stops []func()
	for _, name := range []string{"a", "b", "c"} {
		stop := start(t, replica(t, open(), name, doc, reg))
		defer stop()
		stops = append(stops, stop)
	}
	time.Sleep(19 * time.Second)
	stopAll(stops...)

	evs := rec.snapshot()
	sort.Slice(evs, func(i, j int) bool { return evs[i].started.Before(evs[j].started) })
	if len(evs) < 3 {
		t.Fatalf("%d runs in 19 s of a 5 s job, want at least 3", len(evs))
	}
	var delays []time.Duration
	for i := 1; i < len(evs); i++ {
		prev, ev := evs[i-1], evs[i]
		if ev.started.Before(prev.ended) {
			t.Errorf("slot %s started at %s while slot %s ran until %s", stamp(ev.run.Slot), ev.started.Format(time.StampMilli),
				stamp(prev.run.Slot), prev.ended.Format(time.StampMilli))
			continue
		}
		if ev.run.Slot.Before(prev.ended) { // it came due while prev ran: it waited
			delays = append(delays, ev.started.Sub(prev.ended))
		}
	}
	ran := map[time.Time]bool{}
	for _, ev := range evs {
		ran[ev.run.Slot] = true
	}
	st := open()
	skipped := 0
	for _, m := range history(t, st, "slow") {
		switch {
		case m.State == slotstore.StateSkipped && ran[m.Slot]:
			t.Errorf("slot %s ran and is recorded skipped (%s)", stamp(m.Slot), m.Reason)
		case m.State == slotstore.StateSkipped && strings.HasPrefix(m.Reason, "not caught up") && m.Slot.Before(evs[0].run.Slot):
			// Due as the replicas came up, before the store recorded the job.
		case m.State == slotstore.StateSkipped && m.Reason != slotstore.ReasonOverlap:
			t.Errorf("slot %s skipped for %q, want overlap", stamp(m.Slot), m.Reason)
		case m.State == slotstore.StateSkipped:
			skipped++
		case m.State != slotstore.StateDone && m.State != slotstore.StateReleased && m.State != slotstore.StateRunning:
			t.Errorf("slot %s is %s", stamp(m.Slot), m.State)
		}
	}
	if len(delays) == 0 || skipped == 0 {
		t.Fatalf("%d runs started after a wait, %d slots replaced while waiting: want both", len(delays), skipped)
	}
	slices.Sort(delays)
	t.Logf("%d runs, %d waited and started %v to %v after their predecessor ended (median %v); %d replaced while waiting",
		len(evs), len(delays), delays[0], delays[len(delays)-1], delays[len(delays)/2], skipped)
	if worst := delays[len(delays)-1]; worst >= time.Second {
		t.Errorf("a waiting slot started %v after its predecessor ended: the replica that ran it should claim it at once", worst)
	}
}
