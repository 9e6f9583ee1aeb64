package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// AppendAction implements slotstore.Store: the entry goes at the end of
// the store's log, under its mutex, with the next sequence number and the
// store's time.
func (s *Store) AppendAction(ctx context.Context, a slotstore.Action) (slotstore.Action, error) {
	if err := rules.ValidateAction(a); err != nil {
		return slotstore.Action{}, err
	}
	unlock, now, err := s.lock(ctx, "append action")
	if err != nil {
		return slotstore.Action{}, err
	}
	defer unlock()
	s.actionSeq++
	a.Seq, a.At = s.actionSeq, now
	s.actions = append(s.actions, a)
	return a, nil
}

// Actions implements slotstore.Store: a walk of the log back from Before.
func (s *Store) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	p, err := rules.NormalizeActions(p)
	if err != nil {
		return nil, err
	}
	unlock, _, err := s.lock(ctx, "actions")
	if err != nil {
		return nil, err
	}
	defer unlock()
	i := len(s.actions)
	if p.Before > 0 {
		i = sort.Search(len(s.actions), func(i int) bool { return s.actions[i].Seq >= p.Before })
	}
	out := []slotstore.Action{}
	for i--; i >= 0 && len(out) < p.Limit; i-- {
		if a := s.actions[i]; rules.ActionListed(a, p) {
			out = append(out, a)
		}
	}
	return out, nil
}

// pruneActions deletes the entries of the log whose retention has ended
// at now and returns how many; s.mu is held.
func (s *Store) pruneActions(now time.Time) int {
	n := len(s.actions)
	s.actions = slices.DeleteFunc(s.actions, func(a slotstore.Action) bool { return rules.ActionExpired(a, now) })
	return n - len(s.actions)
}
