package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// lossyClaim applies claims but loses the reply of the first one of a
// slot at or after from.
type lossyClaim struct {
	slotstore.Store
	from time.Time
	done atomic.Bool
}

func (s *lossyClaim) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	rs, err := s.Store.Claim(ctx, p)
	for _, r := range p.Requests {
		if !r.Slot.Before(s.from) && !s.done.Load() {
			s.done.Store(true)
			return nil, fmt.Errorf("%w: reply lost", slotstore.ErrOutcomeUnknown)
		}
	}
	return rs, err
}

// A claim made ahead whose reply is lost is adopted on its retry (backoff
// 250 ms), and the run still starts at the slot's instant, not at once.
func TestAdoptedAheadStartsAtTheInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		j := job("j", rec.fn)
		j.Schedule = mustSchedule(t, "@every 10s")
		e := newEngine(t, j)
		start := time.Now()
		st := &lossyClaim{Store: memstore.New(memstore.Options{}), from: start.Truncate(10 * time.Second).Add(20 * time.Second)}
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx, RunParams{Store: st}) }()
		time.Sleep(35 * time.Second)
		stop()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		for _, r := range rec.snapshot() {
			if r.at.Before(r.run.Slot) {
				t.Errorf("slot %s started at %s: %v before its instant", r.run.Slot.Format("15:04:05.000"),
					r.at.Format("15:04:05.000"), r.run.Slot.Sub(r.at))
			}
		}
	})
}
