package memstore_test

import (
	"errors"
	"maps"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// checkClaims checks the answers to a claim batch against the state before.
func (m *model) checkClaims(before map[key]slotstore.Marker, reqs []slotstore.ClaimRequest, res []slotstore.ClaimResult) {
	if len(res) != len(reqs) {
		m.fatalf("%d claims, %d results", len(reqs), len(res))
	}
	before = maps.Clone(before)
	for i, r := range reqs {
		if _, ok := m.born[r.Job]; !ok {
			m.born[r.Job] = m.now // a claim begins its job's generation
		}
		k, got := keyOf(r.Job, r.Slot), res[i]
		prior, had := before[k]
		// A Backfill claim wins a slot of the generation skipped since it
		// began, but for data loss, unless it forbids overlap while
		// another slot of the job runs, or the slot's retention has ended
		// (then it creates no marker either).
		retain := r.Retain
		if retain <= 0 {
			retain = rules.DefaultRetain
		}
		kept := m.now.Before(r.Slot.UTC().Truncate(time.Second).Add(retain))
		backfill := had && r.Backfill && kept && prior.State == slotstore.StateSkipped &&
			prior.Reason != slotstore.ReasonDataLoss && !prior.ClaimedAt.Before(m.born[r.Job]) &&
			!prior.Slot.Before(m.born[r.Job]) && !(r.Overlap == policy.OverlapForbid && busy(before, r, m.now))
		if !had && r.Backfill && !kept && got.Status != slotstore.Absent {
			m.fatalf("backfill %+v at %v, its retention over, of no marker: %v, want absent", r, m.now, got.Status)
		}
		if backfill != (had && prior.State == slotstore.StateSkipped && got.Status == slotstore.Won) {
			m.fatalf("claim %+v of %+v, born %v: %v", r, prior, m.born[r.Job], got.Status)
		}
		if backfill {
			m.backfilled[k] = true
			if c := got.Claim; c.Attempt != 1 || c.PrevHolder != "" || c.Retry || got.Marker.Manual || got.Marker.Reason != "" {
				m.fatalf("backfill %+v of %+v: %+v, marker %+v, want a first claim's", r, prior, c, got.Marker)
			}
		}
		if got.Status != slotstore.Absent && got.Status != slotstore.NotYet {
			before[k] = got.Marker // later requests of the batch see it
		}
		for _, ref := range got.Replaced {
			before[keyOf(ref.Job, ref.Slot)] = slotstore.Marker{Job: ref.Job, Slot: ref.Slot, State: slotstore.StateReplaced}
		}
		if got.Status != slotstore.Won {
			continue
		}
		c := got.Claim
		switch {
		case had && !backfill && (prior.State.Final() || (prior.State == slotstore.StateRunning || prior.State == slotstore.StateRetrying) &&
			m.now.Before(prior.LeaseEnd)):
			m.fatalf("claim %+v won %+v over %+v", r, c, prior)
		case !had && !r.Term && r.Slot.Before(m.born[r.Job]):
			m.fatalf("claim %+v won a slot older than its generation, born %v", r, m.born[r.Job])
		case c.Fence <= m.fence[r.Job]:
			m.fatalf("claim %+v won fence %d after %d", r, c.Fence, m.fence[r.Job])
		case rules.ValidateRef(c.Ref) != nil:
			m.fatalf("claim %+v won %+v, which no renew, finish or release accepts: %v", r, c, rules.ValidateRef(c.Ref))
		}
		m.fence[r.Job] = c.Fence
		m.won = append(m.won, c.Ref)
	}
}

// busy reports whether a slot of r's job other than r's runs under a live
// lease at now, among markers.
func busy(markers map[key]slotstore.Marker, r slotstore.ClaimRequest, now time.Time) bool {
	for k, o := range markers {
		if k.job == r.Job && k.slot != r.Slot.Unix() && o.State == slotstore.StateRunning && now.Before(o.LeaseEnd) {
			return true
		}
	}
	return false
}

// checkMutation checks a renew, finish or release of ref as the slotstore
// package documentation's "Fenced mutations" says it must answer.
func (m *model) checkMutation(op string, before map[key]slotstore.Marker, ref slotstore.Ref, invalid, err error) {
	mk, ok := before[keyOf(ref.Job, ref.Slot)]
	settled := mk.State == slotstore.StateDone || mk.State == slotstore.StateRetrying
	var want error
	switch {
	case invalid != nil:
		want = slotstore.ErrInvalid
	case !ok || mk.Fence != ref.Fence:
		want = slotstore.ErrLeaseLost
	case mk.State == slotstore.StateRunning, settled && op == "finish":
	case settled && op == "renew":
		want = slotstore.ErrFinished
	default:
		want = slotstore.ErrLeaseLost
	}
	if (err == nil) != (want == nil) || !errors.Is(err, want) {
		m.fatalf("%s %+v of %+v: %v, want %v", op, ref, mk, err, want)
	}
}

// checkSkips checks the answers to a skip batch: a slot without a marker is
// recorded skipped once the store's clock reaches NotBefore, never before.
func (m *model) checkSkips(before map[key]slotstore.Marker, reqs []slotstore.SkipRequest, res []slotstore.ClaimResult) {
	if len(res) != len(reqs) {
		m.fatalf("%d skips, %d results", len(reqs), len(res))
	}
	before = maps.Clone(before)
	for i, r := range reqs {
		k, got := keyOf(r.Job, r.Slot), res[i]
		if _, had := before[k]; had {
			continue
		}
		want := slotstore.Skipped
		if m.now.Before(r.NotBefore) {
			want = slotstore.NotYet
		}
		if got.Status != want {
			m.fatalf("skip %+v at %v: %v, want %v", r, m.now, got.Status, want)
		}
		if want == slotstore.Skipped {
			before[k] = got.Marker
		}
	}
}

// checkEnroll checks that a job's generation begins once, when first seen.
func (m *model) checkEnroll(jobs []string, gens []slotstore.Generation) {
	if len(gens) != len(jobs) {
		m.fatalf("enrolled %d jobs, %d generations", len(jobs), len(gens))
	}
	for i, g := range gens {
		if _, ok := m.born[jobs[i]]; !ok {
			m.born[jobs[i]] = m.now
		}
		if g.Job != jobs[i] || !g.Born.Equal(m.born[jobs[i]]) {
			m.fatalf("enroll %q: %+v, want born %v", jobs[i], g, m.born[jobs[i]])
		}
	}
}
