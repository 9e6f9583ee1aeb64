// The plan set: the jobs of the configuration in force and the schedules
// held as data this replica runs, as one value a reader loads whole. The
// schedules are kept in shards, each a map copied on write, so that a
// change of a few of 100,000 schedules copies a few small maps, not all.

package engine

import "hash/maphash"

// heldShards is the number of shards of the schedules held as data.
const heldShards = 256

// planSet is the jobs of one configuration, in its order and by name, and
// the schedules held as data this replica runs.
type planSet struct {
	plans    []*plan // the configuration's, in its order
	byName   map[string]*plan
	revision int64
	// held are the schedules held as data, by name, in shards (shardOf);
	// a shard is never changed once the set is in force.
	held  [heldShards]map[string]*plan
	nHeld int
}

// heldSeed picks the shard of a name.
var heldSeed = maphash.MakeSeed()

func shardOf(name string) int { return int(maphash.String(heldSeed, name) % heldShards) }

// plan returns the plan named name: a job of the configuration, or a
// schedule held as data; nil for none.
func (s *planSet) plan(name string) *plan {
	if p := s.byName[name]; p != nil {
		return p
	}
	return s.held[shardOf(name)][name]
}

// config returns the configuration's plans.
func (s *planSet) config() []*plan { return s.plans }

// schedules returns the plans of the schedules held as data, in no order.
func (s *planSet) schedules() []*plan {
	out := make([]*plan, 0, s.nHeld)
	for _, sh := range s.held {
		for _, p := range sh {
			out = append(out, p)
		}
	}
	return out
}

// all returns every plan: the configuration's, then the schedules'.
func (s *planSet) all() []*plan { return append(append([]*plan(nil), s.plans...), s.schedules()...) }

// withConfig returns a set of plans and the schedules of s but those a job
// of plans shadows, which it also returns.
func (s *planSet) withConfig(plans []*plan, revision int64) (next *planSet, shadowed []*plan) {
	next = &planSet{plans: plans, byName: make(map[string]*plan, len(plans)), revision: revision}
	for _, p := range plans {
		next.byName[p.name] = p
	}
	if s == nil {
		return next, nil
	}
	repl := map[string]*plan{}
	for _, p := range plans {
		if h := s.held[shardOf(p.name)][p.name]; h != nil {
			repl[p.name], shadowed = nil, append(shadowed, h)
		}
	}
	next.held, next.nHeld = s.held, s.nHeld
	next.setHeld(repl)
	return next, shadowed
}

// withSchedules returns s with the schedule plans of repl in place of its
// own (nil: none), the new plans and the plans they replace.
func (s *planSet) withSchedules(repl map[string]*plan) (next *planSet, fresh, gone []*plan) {
	next = &planSet{plans: s.plans, byName: s.byName, revision: s.revision, held: s.held, nHeld: s.nHeld}
	for name, r := range repl {
		if old := s.held[shardOf(name)][name]; old != nil {
			gone = append(gone, old)
		}
		if r != nil {
			fresh = append(fresh, r)
		}
	}
	next.setHeld(repl)
	return next, fresh, gone
}

// setHeld applies repl to the schedules of s, a set not yet in force: each
// shard it touches is copied once.
func (s *planSet) setHeld(repl map[string]*plan) {
	copied := map[int]bool{}
	for name, r := range repl {
		i := shardOf(name)
		if !copied[i] {
			c := make(map[string]*plan, len(s.held[i])+1)
			for k, v := range s.held[i] {
				c[k] = v
			}
			s.held[i], copied[i] = c, true
		}
		_, had := s.held[i][name]
		switch {
		case r != nil:
			s.held[i][name] = r
			if !had {
				s.nHeld++
			}
		case had:
			delete(s.held[i], name)
			s.nHeld--
		}
	}
}
