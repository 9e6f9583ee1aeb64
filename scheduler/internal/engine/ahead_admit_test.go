package engine

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// max_running 1, a job every 2 s whose runs take 1.7 s: every run ends
// before the next slot, so no slot is ever due while the replica is full.
// Claimed 500 ms ahead, each slot's claim finds the previous run still
// going, and waits quietly: no overload is logged.
func TestAheadClaimsWaitingForRoomAreNoOverload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		j := job("j", func(ctx context.Context, r jobs.Run) error {
			rec.fn(ctx, r)
			time.Sleep(1700 * time.Millisecond)
			return nil
		})
		j.Schedule = mustSchedule(t, "@every 2s")
		logs := &testlog.Buffer{}
		e, err := New(Config{Replica: "a", Incarnation: "t", Log: slog.New(slog.NewJSONHandler(logs, nil)), Now: time.Now,
			Grace: time.Second, Jobs: []JobSpec{j}, MaxRunning: 1})
		if err != nil {
			t.Fatal(err)
		}
		st := memstore.New(memstore.Options{})
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(20 * time.Second)
		stop()
		<-ran
		for _, r := range rec.snapshot() {
			if !r.at.Equal(r.run.Slot) {
				t.Logf("slot %s started at %s", r.run.Slot.Format("15:04:05.000"), r.at.Format("15:04:05.000"))
			}
		}
		if s := logs.String(); strings.Contains(s, "overloaded") {
			for _, l := range strings.Split(s, "\n") {
				if strings.Contains(l, "overload") {
					t.Log(l)
				}
			}
			t.Errorf("overload logged though every run ended before the next slot was due")
		}
	})
}
