package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A store is named by its Go package when the configuration names none.
func TestRecordsKind(t *testing.T) {
	if k := (Records{st: memstore.New(memstore.Options{})}).Kind(); k != "memstore" {
		t.Errorf("a memory store's kind %q, want its package's name", k)
	}
}

// A pause set through this replica's Records is obeyed at its very next
// slot claimed after it, even one due while the pauses read just before it
// are still fresh (the loop reads them pauseLead ahead of the claim and
// keeps a read pauseFresh).
func TestPauseThroughRecordsObeyedAtNextSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		j := job("j", rec.fn)
		j.Schedule = mustSchedule(t, "@every 1s")
		e := newEngine(t, j)
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: memstore.New(memstore.Options{})}) }()
		defer func() { stop(); <-ran }()
		for len(rec.snapshot()) < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		// Just after the read for the next slot, just before it is
		// claimed (ahead of its instant).
		next := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(next.Add(-claimAhead - pauseLead/2)))
		synctest.Wait()
		r, ok := e.Records()
		if !ok {
			t.Fatal("no Run in progress")
		}
		if err := r.SetPause(ctx, slotstore.PauseParams{Job: "j", Paused: true, By: "test", Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		for _, s := range rec.snapshot() {
			if !s.run.Slot.Before(next) {
				t.Errorf("slot %v ran after the pause set before it", s.run.Slot)
			}
		}
	})
}
