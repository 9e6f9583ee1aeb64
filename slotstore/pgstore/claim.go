package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Claim implements slotstore.Store. The batch is one statement and one
// round trip: a call of the schema's claim function (functions/claim.sql),
// which begins the generations of the batch's jobs that have none,
// decides every request in one transaction, as the decision table in Go
// (see slotstore's package documentation) would in request order (fresh
// slots, and answers that change nothing, in one set-based statement; the
// rest one by one), and issues each job's fences in request order. When
// ctx has a deadline, the same round trip first bounds the claim's waits
// in the server by it (see send).
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeClaims(p.Requests)
	if err != nil {
		return nil, err
	}
	b := newBatch(len(reqs))
	for i, r := range reqs {
		reason := ""
		if r.Overlap == policy.OverlapReplace {
			reason = rules.ReasonReplacedBy + r.Slot.Format(time.RFC3339)
		}
		b.add(r, false, reason, r.NotBefore)
		b.spec(i, r.Spec)
	}
	return s.run(ctx, "claim", p.Replica, p.Incarnation, b)
}

// Skip implements slotstore.Store: one call of the claim function, as
// Claim, deciding as the decision table does for a skip. Skips begin no
// generation.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	b := newBatch(len(reqs))
	for i, r := range reqs {
		b.add(slotstore.ClaimRequest{Job: r.Job, Slot: r.Slot, Retain: r.Retain}, true, r.Reason, r.NotBefore)
		b.spec(i, r.Spec)
	}
	return s.run(ctx, "skip", p.Replica, "", b)
}

// run calls the claim function on b for replica and its incarnation: it
// sends the call, reads one row a request, and, in a pgx batch, the
// commit after them.
func (s *Store) run(ctx context.Context, op, replica, incarnation string, b *batch) ([]slotstore.ClaimResult, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrClosed)
	}
	if len(b.jobs) == 0 {
		return []slotstore.ClaimResult{}, nil
	}
	conn, err := s.conn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, br, err := s.send(ctx, conn, b.args(replica, incarnation))
	if br != nil {
		defer br.Close()
	}
	if err != nil {
		return nil, s.fail(op, lockDeadline(err))
	}
	defer rows.Close()
	out, err := b.read(rows)
	if err != nil {
		return nil, s.fail(op, lockDeadline(err))
	}
	// Rows end at the server's ReadyForQuery: only then has the batch
	// committed, so an error here may follow a commit. In a pgx batch they
	// end at the claim's CommandComplete, and the batch's Close reads the
	// ReadyForQuery.
	if br != nil {
		rows.Close()
		if err := br.Close(); err != nil {
			return nil, s.fail(op, lockDeadline(err))
		}
	}
	return out, nil
}

// send sends the call of the claim function with args. When ctx has a
// deadline, the call goes in a pgx batch (returned, for its Close reads
// the commit) after setWaitBoundSQL, and the error of either is returned.
func (s *Store) send(ctx context.Context, conn *pgxpool.Conn, args []any) (pgx.Rows, pgx.BatchResults, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		rows, err := conn.Query(ctx, s.q.claim, args...)
		return rows, nil, err
	}
	// The claim's waits end, server-side, before the deadline: one whose
	// client gave up (its cancel request lost with the connection) must
	// not wait on and then win a slot nobody listens for. One batch, one
	// round trip and one implicit transaction, so the setting ends with
	// the claim.
	qb := &pgx.Batch{}
	qb.Queue(setWaitBoundSQL, lockTimeout(time.Until(deadline)))
	qb.Queue(s.q.claim, args...)
	br := conn.SendBatch(ctx, qb)
	if _, err := br.Exec(); err != nil {
		return nil, br, err
	}
	rows, err := br.Query()
	return rows, br, err
}

// read reads the claim function's rows, one a request of b, in any order,
// to their end (rows.Err).
func (b *batch) read(rows pgx.Rows) ([]slotstore.ClaimResult, error) {
	n := len(b.jobs)
	out := make([]slotstore.ClaimResult, n)
	got := 0
	// The statement reads clock_timestamp() for each row once the claim
	// function has made them all: the latest reading, before the last row
	// left, is the answer's time, one for the batch.
	var last time.Time
	for rows.Next() {
		var (
			ord            int32
			won, retry     bool
			prev           string
			m              slotstore.Marker
			replacedSlots  []time.Time
			replacedFences []int64
			now, answered  time.Time
			superseded     bool
		)
		dest, done := markerDest(&m)
		dest = append(append([]any{&ord, &won, &prev, &retry}, dest...), &replacedSlots, &replacedFences, &now, &superseded,
			&answered)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		done()
		if ord < 1 || int(ord) > n || len(replacedSlots) != len(replacedFences) {
			return nil, fmt.Errorf("result for request %d of %d", ord, n)
		}
		i := int(ord) - 1
		if answered.After(last) {
			last = answered
		}
		if superseded {
			out[i] = rules.Superseded(b.jobs[i], b.slots[i])
			got++
			continue
		}
		res := b.answer(i, m, won, prev, now.UTC())
		if won {
			res.Claim.Retry = retry
			for j, slot := range replacedSlots {
				res.Replaced = append(res.Replaced, slotstore.Ref{Job: m.Job, Slot: slot.UTC(), Fence: replacedFences[j]})
			}
		}
		out[i] = res
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if got != n {
		return nil, fmt.Errorf("%d results for %d requests", got, n)
	}
	return rules.Answered(out, last.UTC()), nil
}

// answer is the result of request i, whose slot's marker is now m (no
// state: none), decided at now.
func (b *batch) answer(i int, m slotstore.Marker, won bool, prev string, now time.Time) slotstore.ClaimResult {
	if m.State == stateQueued {
		return slotstore.ClaimResult{Status: slotstore.Queued, Marker: slotstore.Marker{Job: b.jobs[i], Slot: b.slots[i]},
			Remaining: max(m.LeaseEnd.Sub(now), 0)}
	}
	res := result(m, won, prev, now)
	// A backfill decided once the database's clock had reached its
	// keep_until (kept to the microsecond) was a takeover-only claim
	// (rules.Effective).
	takeover, backfill := b.takeover[i], b.backfill[i]
	if backfill && !now.Before(b.keeps[i].Truncate(time.Microsecond)) {
		takeover, backfill = true, false
	}
	notYet := slotstore.ClaimResult{Status: slotstore.NotYet, Remaining: max(b.notBefore[i].Time.Sub(now), time.Microsecond)}
	switch {
	case b.skipping[i] && m.State == "":
		// A skip leaves a slot without a marker only before its
		// NotBefore.
		return notYet
	case !b.skipping[i] && m.State == "" && !takeover:
		// So does a claim.
		return notYet
	case backfill && !won && m.State == slotstore.StateSkipped && m.Reason != slotstore.ReasonDataLoss &&
		b.notBefore[i].Valid && now.Before(b.notBefore[i].Time.Truncate(time.Microsecond)):
		// A backfill the function left a slot it may win alone because
		// its NotBefore had not come, as the decision table does
		// (rules.Decide); the database keeps NotBefore to the
		// microsecond.
		return notYet
	}
	return res
}

// stateQueued is the state of the row the claim function answers for a
// claim with policy.OverlapQueue that wrote nothing while another slot of
// its job runs, under a live lease or an expired one a takeover may still
// win: its lease_end is the least lease end of those slots, the claim's
// time for an expired one. No marker is ever in this state.
const stateQueued = "queued"

// lockDeadline marks a claim that the server stopped at the bound
// setWaitBoundSQL set (SQLSTATE 55P03, lock_not_available: the claim
// function waits with NOWAIT only inside a handler; or 57014,
// query_canceled, at statement_timeout) as having run into its deadline:
// it fails as a timeout does, errors.Is context.DeadlineExceeded, but
// definitely, for it rolled back.
func lockDeadline(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "57014") {
		return fmt.Errorf("%w: the claim's wait in the server reached the deadline: %w", context.DeadlineExceeded, err)
	}
	return err
}

// setWaitBoundSQL sets lock_timeout and statement_timeout, for the current
// transaction only, to $1 milliseconds, or each to the session's own
// setting when that is tighter. The claim that follows in the batch then
// waits no longer than that for any one lock (SQLSTATE 55P03,
// lock_not_available) nor, all its waits added up, in all (57014,
// query_canceled); either way it rolls back, which fail reports as a
// definite failure.
const setWaitBoundSQL = `SELECT
	pg_catalog.set_config('lock_timeout', least($1::bigint,
		nullif((extract(epoch FROM pg_catalog.current_setting('lock_timeout')::interval) * 1000)::bigint, 0))::text, true),
	pg_catalog.set_config('statement_timeout', least($1::bigint,
		nullif((extract(epoch FROM pg_catalog.current_setting('statement_timeout')::interval) * 1000)::bigint, 0))::text, true)`

// lockTimeout is the bound, in whole milliseconds, for a claim with
// left until its deadline: a tenth of it (at least a millisecond) short of
// the deadline, so the server's answer can arrive before it, and at least a
// millisecond (0 would mean none).
func lockTimeout(left time.Duration) int64 {
	return max(int64((left-max(left/10, time.Millisecond))/time.Millisecond), 1)
}

// result is the answer to one request whose slot's marker is now m; an
// empty state means the slot has no marker. A request that did not win
// reports what the decision table in Go reports for the marker it left.
func result(m slotstore.Marker, won bool, prev string, now time.Time) slotstore.ClaimResult {
	if won {
		return slotstore.ClaimResult{Status: slotstore.Won, Marker: m, Claim: slotstore.Claim{
			Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: prev,
		}}
	}
	_, res := rules.Apply(rules.DecideLose, m, slotstore.ClaimRequest{}, "", "", 0, now)
	if res.Status == slotstore.Absent {
		res.Marker = slotstore.Marker{}
	}
	return res
}
