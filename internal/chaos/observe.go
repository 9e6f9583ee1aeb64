package chaos

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// probe is a holder taken out mid-run (killed or frozen): the check finds
// the takeover of its slot and measures how long it took against the
// lease the holder had left.
type probe struct {
	key      slotKey
	fence    int64
	fault    string    // the fault's kind and replica
	at       time.Time // when the holder was taken out
	leaseEnd time.Time // its lease's end, read from the store just after
}

// probe records a probe for each run replica held at at whose marker the
// store still shows running under that run's fence.
func (s *session) probe(kind, replica string, at time.Time, held []runRef) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, r := range held {
		slot, err := time.Parse(time.RFC3339, r.slot)
		if err != nil {
			continue
		}
		// Newest slots first: a replica whose clock runs a minute fast has
		// claimed up to a minute of slots ahead of this one.
		ms, err := s.store.History(ctx, slotstore.HistoryParams{Job: r.job, Limit: 500})
		if err != nil {
			continue
		}
		for _, m := range ms {
			if m.Slot.Equal(slot) && m.State == slotstore.StateRunning && m.Fence == r.fence {
				s.mu.Lock()
				s.probes = append(s.probes, &probe{key: slotKey{r.job, slot}, fence: r.fence, fault: kind + " " + replica, at: at, leaseEnd: m.LeaseEnd})
				s.mu.Unlock()
			}
		}
	}
}

// snapshotLoop reads the store's markers every second until ctx ends:
// markers a store loses with its data are kept here.
func (s *session) snapshotLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		s.snapshot(ctx)
	}
}

// snapshot merges the store's newest markers of every job into the
// versions seen so far.
func (s *session) snapshot(ctx context.Context) {
	for _, j := range s.jobs() {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ms, err := s.store.History(cctx, slotstore.HistoryParams{Job: j.name, Limit: 200})
		cancel()
		if err != nil {
			continue // the store is down: the next look sees what it kept
		}
		s.mu.Lock()
		for _, m := range ms {
			k := slotKey{m.Job, m.Slot.UTC()}
			vs := s.markers[k]
			if n := len(vs); n == 0 || !sameVersion(vs[n-1], m) {
				s.markers[k] = append(vs, m)
			}
		}
		s.mu.Unlock()
	}
}

func sameVersion(a, b slotstore.Marker) bool {
	return a.State == b.State && a.Fence == b.Fence && a.Reason == b.Reason
}
