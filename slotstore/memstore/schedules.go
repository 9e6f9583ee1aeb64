package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// WriteSchedules implements slotstore.Store: the whole batch under the
// store's mutex, each write applied as rules.ApplyWrite decides.
func (s *Store) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	if err := rules.NormalizeWrites(p); err != nil {
		return nil, err
	}
	unlock, now, err := s.lock(ctx, "write schedules")
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := make([]slotstore.ScheduleResult, len(p.Writes))
	wrote := false
	for i, w := range p.Writes {
		var cur *slotstore.CatalogEntry
		if e, ok := s.catalog[w.ID]; ok {
			cur = &e
		}
		e, out, err := rules.ApplyWrite(cur, w, p.By, now)
		if out == rules.Changed {
			s.seq++
			e.Seq = s.seq
			s.catalog[w.ID] = e
			s.bornOf(w.ID, now)
			wrote = true
		}
		res[i] = slotstore.ScheduleResult{Entry: copyEntry(e), Err: err}
	}
	if wrote {
		s.notify()
	}
	return res, nil
}

// Schedules implements slotstore.Store.
func (s *Store) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeSchedules(p)
	if err != nil {
		return nil, err
	}
	unlock, _, err := s.lock(ctx, "schedules")
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []slotstore.CatalogEntry
	for id, e := range s.catalog {
		if id > p.After && (len(p.IDs) == 0 || slices.Contains(p.IDs, id)) && rules.Listed(e, p) {
			out = append(out, copyEntry(e))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	if len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

// ScheduleChanges implements slotstore.Store.
func (s *Store) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	p, err := rules.NormalizeChanges(p)
	if err != nil {
		return slotstore.Changes{}, err
	}
	unlock, _, err := s.lock(ctx, "schedule changes")
	if err != nil {
		return slotstore.Changes{}, err
	}
	defer unlock()
	out := slotstore.Changes{Head: s.seq}
	for _, e := range s.catalog {
		if e.Seq > p.After {
			out.Entries = append(out.Entries, copyEntry(e))
		}
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Seq < out.Entries[j].Seq })
	if len(out.Entries) > p.Limit {
		out.Entries = out.Entries[:p.Limit]
	}
	return out, nil
}

var _ slotstore.ScheduleWatcher = (*Store)(nil)

// WatchSchedules implements slotstore.ScheduleWatcher.
func (s *Store) WatchSchedules(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watchers[ch] = struct{}{}
	s.mu.Unlock()
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.watchers, ch)
			s.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

// notify tells every watcher of a schedule write; s.mu is held.
func (s *Store) notify() {
	for ch := range s.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
