package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// When the store loses its data, a job declared after_data_loss: run runs
// the slots the loss would have skipped — its first slot after the loss,
// which predates the job's new generation, and the slot running at the
// loss, whose marker went with it — attempt 1 under a new fence; a job left
// at the default skip records both skipped for data loss. No slot is left
// without a record.
func TestAfterDataLoss(t *testing.T) {
	for _, mode := range []string{"run", "skip"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testAfterDataLoss(t, mode) })
		})
	}
}

func testAfterDataLoss(t *testing.T, mode string) {
	base := time.Now().Truncate(time.Minute) // the fake clock began on a minute
	var mu sync.Mutex
	runs := map[int64][]jobs.Run{} // by slot, Unix seconds
	reg := jobs.NewRegistry()
	reg.Register("tick", func(ctx context.Context, run jobs.Run) error {
		mu.Lock()
		runs[run.Slot.Unix()] = append(runs[run.Slot.Unix()], run)
		mu.Unlock()
		t := time.NewTimer(7 * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	})
	// The store's clock runs 100 ms ahead, as a claim reaches a real store
	// a little after its slot: the first claim after a loss begins the
	// job's generation after the slot it claims.
	st := memstore.New(memstore.Options{Clock: func() time.Time { return time.Now().Add(100 * time.Millisecond) }})
	conf := "shutdown_grace: 1s\njobs: {tick: {schedule: '*/10 * * * * *', catch_up: none, lease: 3s, starting_deadline: 5s, " +
		"after_data_loss: " + mode + "}}"
	stop := start(t, replica(t, st, "r", conf, reg))
	// :30 runs until :37; the store loses everything at :33, while it
	// runs. Then again at :58, when nothing runs: the claim of 1:00 is the
	// first after that loss, and begins the job's generation just after
	// its slot's instant.
	byslot := map[int64]slotstore.Marker{}
	read := func() {
		for _, m := range history(t, st, "tick") {
			byslot[m.Slot.Unix()] = m
		}
	}
	time.Sleep(33*time.Second + 500*time.Millisecond)
	st.Lose()
	time.Sleep(25 * time.Second)
	read()
	st.Lose()
	time.Sleep(30 * time.Second)
	read()
	stop()

	lost, next := base.Add(30*time.Second), base.Add(60*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range []time.Time{lost, next} {
		m, ok := byslot[s.Unix()]
		switch {
		case !ok:
			t.Errorf("slot %s: no record after the loss", s.Format(time.TimeOnly))
		case mode == "run" && (m.State != slotstore.StateDone || m.Outcome != slotstore.Succeeded || m.Attempt != 1):
			t.Errorf("slot %s: %s attempt %d (%s), want done, succeeded, attempt 1", s.Format(time.TimeOnly), m.State, m.Attempt, m.Reason)
		case mode == "skip" && (m.State != slotstore.StateSkipped || !strings.HasPrefix(m.Reason, "data loss: ")):
			t.Errorf("slot %s: %s (%s), want skipped for data loss", s.Format(time.TimeOnly), m.State, m.Reason)
		}
	}
	want := map[string]int{"run": 2, "skip": 1} // the slot running at the loss runs again, or not
	if got := len(runs[lost.Unix()]); got != want[mode] {
		t.Errorf("slot %s ran %d times, want %d", lost.Format(time.TimeOnly), got, want[mode])
	}
	if mode == "run" && len(runs[lost.Unix()]) == 2 && runs[lost.Unix()][1].Fence <= runs[lost.Unix()][0].Fence {
		t.Errorf("the run after the loss has fence %d, not above %d", runs[lost.Unix()][1].Fence, runs[lost.Unix()][0].Fence)
	}
	if got := len(runs[next.Unix()]); got != want[mode]-1 {
		t.Errorf("slot %s ran %d times, want %d", next.Format(time.TimeOnly), got, want[mode]-1)
	}
	// Slots after each are the new generation's, and run either way.
	if after := base.Add(70 * time.Second); len(runs[after.Unix()]) != 1 {
		t.Errorf("slot %s ran %d times, want 1", after.Format(time.TimeOnly), len(runs[after.Unix()]))
	}
}
