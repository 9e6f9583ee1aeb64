package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// stuckPauses holds every read of the pauses until released.
type stuckPauses struct {
	slotstore.Store
	reading chan struct{} // closed by the first read
	release chan struct{}
	once    sync.Once
}

func (s *stuckPauses) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	s.once.Do(func() { close(s.reading) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return slotstore.Pauses{}, ctx.Err()
	}
	return s.Store.Pauses(ctx)
}

// A trigger whose claim is slow holds up no reader of the live engine: the
// admin API's reads and a pause made through this replica go on while it
// waits.
func TestSlowTriggerHoldsUpNoReader(t *testing.T) {
	sched, err := schedule.Parse("0 0 30 2 *", "UTC") // never fires
	if err != nil {
		t.Fatal(err)
	}
	j := job("j", func(context.Context, jobs.Run) error { return nil })
	j.Schedule = sched
	e := newEngine(t, j)
	st := &stuckPauses{Store: memstore.New(memstore.Options{}), reading: make(chan struct{}), release: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
	defer func() { stop(); <-ran }()
	for _, ok := e.Records(); !ok; _, ok = e.Records() {
		time.Sleep(time.Millisecond)
	}
	triggered := make(chan error, 1)
	go func() { _, _, err := e.Trigger(ctx, "j"); triggered <- err }()
	<-st.reading // the trigger's claim waits for the pauses, holding the live lock

	read := make(chan Records, 1)
	go func() {
		r, _ := e.Records()
		read <- r
	}()
	guard := time.AfterFunc(30*time.Second, func() { close(st.release) })
	got := <-read
	if !guard.Stop() {
		t.Fatal("the readers waited for the trigger's claim")
	}
	close(st.release)
	if got.st != st {
		t.Errorf("Records() = %v during Run, want Run's store", got.st)
	}
	if err := <-triggered; err != nil {
		t.Errorf("trigger: %v", err)
	}
}
