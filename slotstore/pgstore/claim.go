package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// Claim implements slotstore.Store. The batch is one statement and one
// round trip: a call of the schema's claim function
// (migrations/0002_claim.sql), which decides every request in one
// transaction, as slotstore.Decide and slotstore.Apply would in request
// order, and issues fences in request order.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := slotstore.NormalizeAll(p.Requests)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: claim: %w", slotstore.ErrClosed)
	}
	if len(reqs) == 0 {
		return []slotstore.ClaimResult{}, nil
	}
	n := len(reqs)
	var (
		jobs     = make([]string, n)
		slots    = make([]time.Time, n)
		leases   = make([]int64, n)
		skips    = make([]bool, n)
		maxes    = make([]int32, n)
		keeps    = make([]time.Time, n)
		takeover = make([]bool, n)
	)
	for i, r := range reqs {
		jobs[i], slots[i], leases[i] = r.Job, r.Slot, micros(r.Lease)
		skips[i], maxes[i] = r.OnCrash == slotstore.OnCrashSkip, int32(min(r.MaxAttempts, 1<<30))
		keeps[i], takeover[i] = r.Slot.Add(r.Retain), r.TakeoverOnly
	}

	conn, err := s.conn(ctx, "claim")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.claim, p.Replica, jobs, slots, leases, skips, maxes, keeps, takeover)
	if err != nil {
		return nil, s.fail("claim", err)
	}
	defer rows.Close()

	out := make([]slotstore.ClaimResult, n)
	got := 0
	for rows.Next() {
		var (
			ord  int32
			won  bool
			prev string
			m    slotstore.Marker
			now  time.Time
		)
		dest, done := markerDest(&m)
		if err := rows.Scan(append(append([]any{&ord, &won, &prev}, dest...), &now)...); err != nil {
			return nil, s.fail("claim", err)
		}
		done()
		if ord < 1 || int(ord) > n {
			return nil, s.fail("claim", fmt.Errorf("result for request %d of %d", ord, n))
		}
		out[ord-1] = result(m, won, prev, now.UTC())
		got++
	}
	// Rows end at the server's ReadyForQuery: only then has the batch
	// committed, so an error here may follow a commit.
	if err := rows.Err(); err != nil {
		return nil, s.fail("claim", err)
	}
	if got != n {
		return nil, s.fail("claim", fmt.Errorf("%d results for %d requests", got, n))
	}
	return out, nil
}

// result is the answer to one request whose slot's marker is now m; an
// empty state means the slot has no marker.
func result(m slotstore.Marker, won bool, prev string, now time.Time) slotstore.ClaimResult {
	res := slotstore.ClaimResult{Marker: m}
	switch {
	case won:
		res.Status = slotstore.Won
		res.Claim = slotstore.Claim{
			Ref:     slotstore.Ref{Job: m.Job, Slot: m.Slot, Fence: m.Fence},
			Attempt: m.Attempt, PrevHolder: prev,
		}
	case m.State == "":
		res.Status, res.Marker = slotstore.Absent, slotstore.Marker{}
	case m.State == slotstore.StateRunning:
		res.Status = slotstore.Held
		res.Remaining = m.LeaseEnd.Sub(now)
	case m.State == slotstore.StateAbandoned:
		res.Status = slotstore.Abandoned
	default:
		res.Status = slotstore.Finished
	}
	return res
}
