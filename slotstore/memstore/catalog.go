package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// offer applies an enrolment of job's spec s by replica at now.
func (s *Store) offer(job string, spec slotstore.Spec, replica string, now time.Time) {
	var cur *slotstore.CatalogEntry
	if e, ok := s.catalog[job]; ok {
		cur = &e
	}
	e, _ := rules.Offer(cur, job, spec, replica, now)
	if cur == nil {
		s.names = nil // a new name: sorted again at the next read
	}
	s.catalog[job] = e
}

// Catalog implements slotstore.Store.
func (s *Store) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeCatalog(p)
	if err != nil {
		return nil, err
	}
	unlock, _, err := s.lock(ctx, "catalog")
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []slotstore.CatalogEntry
	for job, e := range s.catalog {
		if job > p.After && (len(p.Jobs) == 0 || slices.Contains(p.Jobs, job)) {
			out = append(out, copyEntry(e))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	if len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

// copyEntry returns e with maps and slices of its own, so a caller cannot
// change the store's.
func copyEntry(e slotstore.CatalogEntry) slotstore.CatalogEntry {
	c := make(map[string]time.Time, len(e.Carriers))
	for r, at := range e.Carriers {
		c[r] = at
	}
	e.Carriers = c
	e.Past = slices.Clone(e.Past)
	return e
}
