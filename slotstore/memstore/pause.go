package memstore

import (
	"context"
	"fmt"
	"sort"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// SetPause implements slotstore.Store.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	if err := rules.ValidatePause(p); err != nil {
		return err
	}
	unlock, now, err := s.lock(ctx, fmt.Sprintf("set pause of %q", p.Job))
	if err != nil {
		return err
	}
	defer unlock()
	if p.Paused {
		s.pauses[p.Job] = slotstore.PauseNote{By: p.By, Reason: p.Reason, At: now}
	} else {
		delete(s.pauses, p.Job)
	}
	return nil
}

// Pauses implements slotstore.Store.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	unlock, _, err := s.lock(ctx, "pauses")
	if err != nil {
		return slotstore.Pauses{}, err
	}
	defer unlock()
	out := slotstore.Pauses{Jobs: []string{}, Notes: make(map[string]slotstore.PauseNote, len(s.pauses))}
	for job, note := range s.pauses {
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
		out.Notes[job] = note
	}
	sort.Strings(out.Jobs)
	return out, nil
}
