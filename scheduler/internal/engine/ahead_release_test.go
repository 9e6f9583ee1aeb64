package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore/memstore"
)

// Replica a (clock 900 ms fast) claims slot S ahead at the store's S-1s;
// replica b (clock 600 ms fast) is answered Held and watches a lease/3
// later, at the store's S-0.5s. a stops at S-0.8s and releases the
// unstarted claim; b's watch takes it over (takeovers are not bound by
// NotBefore) and still starts it at S by the store's clock, not at once.
func TestReleasedAheadTakenOverStartsAtTheInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		type rep struct {
			rec  *recorder
			stop context.CancelFunc
			done chan error
		}
		mk := func(name string, skew time.Duration) rep {
			r := rep{rec: &recorder{}, done: make(chan error, 1)}
			j := job("j", r.rec.fn)
			j.Schedule, j.Lease = mustSchedule(t, "@every 10s"), 1200*time.Millisecond
			e, err := New(Config{Replica: name, Incarnation: name, Log: testLogger(),
				Now: func() time.Time { return time.Now().Add(skew) }, Grace: time.Second, Jobs: []JobSpec{j}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			r.stop = cancel
			go func() { r.done <- e.Run(ctx, RunParams{Store: st}) }()
			return r
		}
		S := time.Now().Truncate(10 * time.Second).Add(20 * time.Second)
		a := mk("a", 900*time.Millisecond)
		b := mk("b", 600*time.Millisecond)
		time.Sleep(time.Until(S.Add(-800 * time.Millisecond)))
		a.stop()
		<-a.done
		time.Sleep(time.Until(S.Add(2 * time.Second)))
		b.stop()
		<-b.done
		for _, r := range append(a.rec.snapshot(), b.rec.snapshot()...) {
			if r.at.Before(r.run.Slot) {
				t.Errorf("slot %s started at %s by the store's clock: %v early", r.run.Slot.Format("15:04:05.000"),
					r.at.Format("15:04:05.000"), r.run.Slot.Sub(r.at))
			}
		}
	})
}
