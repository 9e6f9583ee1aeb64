package memstore

import (
	"context"
	"sort"
	"strings"

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
			s.seqLog = append(s.seqLog, seqRec{s.seq, w.ID})
			if _, had := s.catalog[w.ID]; !had {
				s.names = nil // a new name: sorted again at the next read
			}
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

// Schedules implements slotstore.Store: a walk of the catalog's names in
// order from After (sorted once after each change of the catalog's names).
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
	if len(p.IDs) > 0 {
		for _, id := range rules.IDs(p) {
			if e, ok := s.catalog[id]; ok && rules.Listed(e, p) && len(out) < p.Limit {
				out = append(out, copyEntry(e))
			}
		}
		return out, nil
	}
	names := s.sortedNames()
	from := max(p.After, p.Prefix)
	for i := sort.SearchStrings(names, from); i < len(names) && len(out) < p.Limit; i++ {
		name := names[i]
		if name <= p.After {
			continue
		}
		if !strings.HasPrefix(name, p.Prefix) {
			break
		}
		if e := s.catalog[name]; rules.Listed(e, p) {
			out = append(out, copyEntry(e))
		}
	}
	return out, nil
}

// sortedNames returns the catalog's names in order; s.mu is held.
func (s *Store) sortedNames() []string {
	if s.names == nil {
		s.names = make([]string, 0, len(s.catalog))
		for name := range s.catalog {
			s.names = append(s.names, name)
		}
		sort.Strings(s.names)
	}
	return s.names
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
	i := sort.Search(len(s.seqLog), func(i int) bool { return s.seqLog[i].seq > p.After })
	for ; i < len(s.seqLog) && len(out.Entries) < p.Limit; i++ {
		r := s.seqLog[i]
		if e := s.catalog[r.id]; e.Seq == r.seq { // else written again since: later in the log
			out.Entries = append(out.Entries, copyEntry(e))
		}
	}
	return out, nil
}

// seqRec is one schedule write in the store's log of them: the feed reads
// it from a sequence number on, in order.
type seqRec struct {
	seq int64
	id  string
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
