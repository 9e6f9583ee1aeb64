package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
)

// defaultLimit is the number of markers History returns when
// HistoryParams.Limit is zero.
const defaultLimit = 100

// noLaterSlot bounds History when HistoryParams.Before is zero: later than
// any slot, so the bound is one index range either way.
var noLaterSlot = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// pruneSQL deletes, in one statement, the markers Prune may delete at the
// database's clock: retention over, and not running under a live lease nor
// retrying before the retry is due. It runs only while it holds the
// transaction-scoped advisory lock $1, so one replica prunes a schema at a
// time and the others return at once; it skips rows another transaction has
// locked (a claim or a fenced mutation in progress), so it never waits for,
// or deadlocks with, them; those rows go at the next prune. It also deletes
// the beats past their TTL and slotstore.BeatKeep, skipping locked rows too,
// and the entries of the actions log past their retention
// (actions_by_keep_until), which no statement but this one deletes or
// changes, and counts them with the markers.
const pruneSQL = `WITH turn AS MATERIALIZED (
		SELECT pg_try_advisory_xact_lock($1) AS mine, clock_timestamp() AS t
	),
	victims AS (
		SELECT m.job, m.slot FROM {schema}.markers m, turn
		WHERE turn.mine AND m.keep_until < turn.t AND (m.state NOT IN ('running', 'retrying') OR m.lease_end <= turn.t)
		FOR UPDATE OF m SKIP LOCKED
	),
	gone AS (
		DELETE FROM {schema}.markers m USING victims v WHERE m.job = v.job AND m.slot = v.slot RETURNING 1
	),
	beats AS (
		DELETE FROM {schema}.replicas WHERE replica IN (
			SELECT o.replica FROM {schema}.replicas o, turn
			WHERE turn.mine AND o.keep_until < turn.t FOR UPDATE OF o SKIP LOCKED)
	),
	acts AS (
		DELETE FROM {schema}.actions a USING turn WHERE turn.mine AND a.keep_until < turn.t RETURNING 1
	)
	SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM acts)`

// History implements slotstore.Store: newest slot first, then by job,
// filtered by job and state.
func (s *Store) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	conn, err := s.conn(ctx, "history")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	before := p.Before
	if before.IsZero() {
		before = noLaterSlot
	}
	var rows pgx.Rows
	switch {
	case p.State != "":
		rows, err = conn.Query(ctx, s.q.historyInState, string(p.State), p.Job, limit, before)
	case p.Job == "":
		rows, err = conn.Query(ctx, s.q.historyOfAll, limit, before)
	default:
		rows, err = conn.Query(ctx, s.q.historyOfJob, p.Job, limit, before)
	}
	if err != nil {
		return nil, s.readFail("history", err)
	}
	defer rows.Close()
	out := make([]slotstore.Marker, 0, min(limit, defaultLimit))
	for rows.Next() {
		m, err := scanMarker(rows)
		if err != nil {
			return nil, s.readFail("history", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readFail("history", err)
	}
	return out, nil
}

// readFail is fail for a read: it changed nothing, so its outcome is never
// unknown.
func (s *Store) readFail(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("pgstore: %s: %w: %w", op, slotstore.ErrClosed, scrub(err, s.secrets))
	}
	return scrub(fmt.Errorf("pgstore: %s: %w", op, err), s.secrets)
}

// Prune implements slotstore.Store in one statement. It returns 0 without
// deleting anything while another store prunes the same schema.
func (s *Store) Prune(ctx context.Context) (int, error) {
	conn, err := s.conn(ctx, "prune")
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var n int64
	if err := conn.QueryRow(ctx, s.q.prune, advisoryKey("prune", s.schema)).Scan(&n); err != nil {
		return 0, s.fail("prune", err)
	}
	return int(n), nil
}
