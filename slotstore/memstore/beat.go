package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Beat implements slotstore.Store. It also forgets the beats that have
// outlived slotstore.BeatKeep.
func (s *Store) Beat(ctx context.Context, p slotstore.Beat) error {
	if err := rules.ValidateBeat(p); err != nil {
		return err
	}
	unlock, now, err := s.lock(ctx, fmt.Sprintf("beat of %q", p.Replica))
	if err != nil {
		return err
	}
	defer unlock()
	s.pruneBeats(now)
	p.Duties = slices.Clone(p.Duties) // the caller may reuse its slice
	s.beats[p.Replica] = slotstore.Replica{Beat: p, Seen: now}
	return nil
}

// Replicas implements slotstore.Store.
func (s *Store) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	unlock, now, err := s.lock(ctx, "replicas")
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.pruneBeats(now)
	out := make([]slotstore.Replica, 0, len(s.beats))
	for _, r := range s.beats {
		r.Duties = slices.Clone(r.Duties)
		r.Live = !now.After(r.Seen.Add(r.TTL))
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b slotstore.Replica) int { return strings.Compare(a.Replica, b.Replica) })
	return out, nil
}

// pruneBeats forgets every beat whose TTL and slotstore.BeatKeep have
// both passed at now. The caller holds s.mu.
func (s *Store) pruneBeats(now time.Time) {
	for name, r := range s.beats {
		if now.After(r.Seen.Add(r.TTL).Add(slotstore.BeatKeep)) { // TTL + BeatKeep may overflow
			delete(s.beats, name)
		}
	}
}
