package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/slotcron/slotcron/slotstore"
)

// Claim implements slotstore.Store. The batch is one statement and one
// round trip: a call of the schema's claim function (migrations/, latest
// version in 0005_claim_set_based.sql), which begins the generations of the
// batch's jobs that have none, decides every request in one transaction,
// as slotstore.Decide, Apply and Supersede would in request order (fresh
// slots, and answers that change nothing, in one set-based statement; the
// rest one by one), and issues each job's fences in request order.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := slotstore.NormalizeAll(p.Requests)
	if err != nil {
		return nil, err
	}
	b := newBatch(len(reqs))
	for _, r := range reqs {
		reason := ""
		if r.Overlap == slotstore.OverlapReplace {
			reason = slotstore.ReasonReplacedBy + r.Slot.Format(time.RFC3339)
		}
		b.add(r, false, reason, r.NotBefore)
	}
	return s.run(ctx, "claim", p.Replica, p.Incarnation, b)
}

// Skip implements slotstore.Store: one call of the claim function, as
// Claim, deciding as slotstore.ApplySkip. Skips begin no generation.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := slotstore.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	b := newBatch(len(reqs))
	for _, r := range reqs {
		b.add(slotstore.ClaimRequest{Job: r.Job, Slot: r.Slot, Retain: r.Retain}, true, r.Reason, r.NotBefore)
	}
	return s.run(ctx, "skip", p.Replica, "", b)
}

// batch holds the claim function's arguments, one array a parameter.
type batch struct {
	jobs                                []string
	slots, keeps                        []time.Time
	leases                              []int64
	maxes                               []int32
	crashSkips, takeover, terms, manual []bool
	skipping                            []bool
	overlaps, reasons                   []string
	notBefore                           []pgtype.Timestamptz // null where zero
}

func newBatch(n int) *batch {
	return &batch{
		jobs: make([]string, 0, n), slots: make([]time.Time, 0, n), keeps: make([]time.Time, 0, n),
		leases: make([]int64, 0, n), maxes: make([]int32, 0, n), crashSkips: make([]bool, 0, n),
		takeover: make([]bool, 0, n), terms: make([]bool, 0, n), manual: make([]bool, 0, n), skipping: make([]bool, 0, n),
		overlaps: make([]string, 0, n), reasons: make([]string, 0, n), notBefore: make([]pgtype.Timestamptz, 0, n),
	}
}

func (b *batch) add(r slotstore.ClaimRequest, skipping bool, reason string, notBefore time.Time) {
	b.jobs, b.slots, b.keeps = append(b.jobs, r.Job), append(b.slots, r.Slot), append(b.keeps, r.Slot.Add(r.Retain))
	b.leases, b.maxes = append(b.leases, micros(r.Lease)), append(b.maxes, int32(min(r.MaxAttempts, 1<<30)))
	b.crashSkips, b.takeover = append(b.crashSkips, r.OnCrash == slotstore.OnCrashSkip), append(b.takeover, r.TakeoverOnly)
	b.terms, b.manual, b.skipping = append(b.terms, r.Term), append(b.manual, r.Manual), append(b.skipping, skipping)
	b.overlaps, b.reasons = append(b.overlaps, string(r.Overlap)), append(b.reasons, reason)
	b.notBefore = append(b.notBefore, pgtype.Timestamptz{Time: notBefore, Valid: !notBefore.IsZero()})
}

// run calls the claim function on b for replica and its incarnation.
func (s *Store) run(ctx context.Context, op, replica, incarnation string, b *batch) ([]slotstore.ClaimResult, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrClosed)
	}
	n := len(b.jobs)
	if n == 0 {
		return []slotstore.ClaimResult{}, nil
	}
	conn, err := s.conn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.claim, replica, incarnation, b.jobs, b.slots, b.leases, b.crashSkips, b.maxes,
		b.keeps, b.takeover, b.overlaps, b.terms, b.manual, b.skipping, b.reasons, b.notBefore, slotstore.ReasonDataLoss)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer rows.Close()

	out := make([]slotstore.ClaimResult, n)
	got := 0
	for rows.Next() {
		var (
			ord            int32
			won, retry     bool
			prev           string
			m              slotstore.Marker
			replacedSlots  []time.Time
			replacedFences []int64
			now            time.Time
		)
		dest, done := markerDest(&m)
		dest = append(append([]any{&ord, &won, &prev, &retry}, dest...), &replacedSlots, &replacedFences, &now)
		if err := rows.Scan(dest...); err != nil {
			return nil, s.fail(op, err)
		}
		done()
		if ord < 1 || int(ord) > n || len(replacedSlots) != len(replacedFences) {
			return nil, s.fail(op, fmt.Errorf("result for request %d of %d", ord, n))
		}
		i := int(ord) - 1
		res := result(m, won, prev, now.UTC())
		switch {
		case b.skipping[i] && m.State == "":
			// A skip leaves a slot without a marker only before its
			// NotBefore.
			res = slotstore.ClaimResult{Status: slotstore.NotYet, Remaining: max(b.notBefore[i].Time.Sub(now), time.Microsecond)}
		case !b.skipping[i] && m.State == "" && !b.takeover[i]:
			// So does a claim.
			res = slotstore.ClaimResult{Status: slotstore.NotYet, Remaining: max(b.notBefore[i].Time.Sub(now), time.Microsecond)}
		}
		if won {
			res.Claim.Retry = retry
			for j, slot := range replacedSlots {
				res.Replaced = append(res.Replaced, slotstore.Ref{Job: m.Job, Slot: slot.UTC(), Fence: replacedFences[j]})
			}
		}
		out[i] = res
		got++
	}
	// Rows end at the server's ReadyForQuery: only then has the batch
	// committed, so an error here may follow a commit.
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, err)
	}
	if got != n {
		return nil, s.fail(op, fmt.Errorf("%d results for %d requests", got, n))
	}
	return out, nil
}

// result is the answer to one request whose slot's marker is now m; an
// empty state means the slot has no marker. A request that did not win
// reports what slotstore.Apply reports for the marker it left.
func result(m slotstore.Marker, won bool, prev string, now time.Time) slotstore.ClaimResult {
	if won {
		return slotstore.ClaimResult{Status: slotstore.Won, Marker: m, Claim: slotstore.Claim{
			Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: prev,
		}}
	}
	_, res := slotstore.Apply(slotstore.DecideLose, m, slotstore.ClaimRequest{}, "", "", 0, now)
	if res.Status == slotstore.Absent {
		res.Marker = slotstore.Marker{}
	}
	return res
}
