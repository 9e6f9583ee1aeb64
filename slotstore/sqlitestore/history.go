package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// historyOfJob walks the primary key (job, slot DESC).
	historyOfJob = `SELECT ` + columns + ` FROM markers WHERE job = ?1 AND slot < ?3 ORDER BY slot DESC LIMIT ?2`
	// historyInState filters by state (and job when given); the engine asks
	// it for the few running markers.
	historyInState = `SELECT ` + columns + ` FROM markers WHERE (?1 = '' OR job = ?1) AND state = ?2 AND slot < ?4
		ORDER BY slot DESC, job LIMIT ?3`
	// historyOfJobInState walks the job's key (or markers_running).
	historyOfJobInState = `SELECT ` + columns + ` FROM markers WHERE job = ?1 AND state = ?2 AND slot < ?4 ORDER BY slot DESC LIMIT ?3`
	// historyOfAll walks markers_by_slot (slot DESC, job).
	historyOfAll = `SELECT ` + columns + ` FROM markers WHERE slot < ?2 ORDER BY slot DESC, job LIMIT ?1`
	// pruneMarkers deletes what Prune may: retention over, and not
	// running under a live lease or retrying before the retry is due.
	pruneMarkers = `DELETE FROM markers
		WHERE keep_until < ?1 AND (state NOT IN ('running', 'retrying') OR lease_end <= ?1)`
)

// defaultLimit is the number of markers History returns when
// HistoryParams.Limit is zero.
const defaultLimit = 100

// History implements slotstore.Store. It reads without taking the write
// lock, so it never waits for a claim.
func (s *Store) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlitestore: history: %w", slotstore.ErrClosed)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	db, done, err := s.read(ctx, "history")
	if err != nil {
		return nil, err
	}
	defer done()
	before := int64(math.MaxInt64)
	if !p.Before.IsZero() {
		before = p.Before.Unix()
		if p.Before.Truncate(time.Second).Before(p.Before) {
			before++ // slot < 12:00:00.5 takes 12:00:00
		}
	}
	var rows *sql.Rows
	switch {
	case p.State != "" && p.Job != "":
		rows, err = db.QueryContext(ctx, historyOfJobInState, p.Job, string(p.State), limit, before)
	case p.State != "":
		rows, err = db.QueryContext(ctx, historyInState, p.Job, string(p.State), limit, before)
	case p.Job == "":
		rows, err = db.QueryContext(ctx, historyOfAll, limit, before)
	default:
		rows, err = db.QueryContext(ctx, historyOfJob, p.Job, limit, before)
	}
	if err != nil {
		return nil, s.fail("history", err)
	}
	defer rows.Close()
	out := make([]slotstore.Marker, 0, min(limit, defaultLimit))
	for rows.Next() {
		m, err := scanMarker(rows)
		if err != nil {
			return nil, s.fail("history", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("history", err)
	}
	return out, nil
}

// Prune implements slotstore.Store in one DELETE of markers, one of the
// beats past their TTL and slotstore.BeatKeep, and one of the entries of
// the actions log past their retention (actions_by_keep_until).
func (s *Store) Prune(ctx context.Context) (int, error) {
	done, err := s.begin(ctx, "prune")
	if err != nil {
		return 0, err
	}
	defer done()
	now := s.clock().UnixMilli()
	res, err := s.conn().ExecContext(ctx, pruneMarkers, now)
	if err != nil {
		return 0, s.failSent(ctx, "prune", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, s.fail("prune", err)
	}
	if _, err := s.conn().ExecContext(ctx, dropBeats, now); err != nil {
		return int(n), s.failSent(ctx, "prune: delete old beats", err)
	}
	res, err = s.conn().ExecContext(ctx, pruneActions, now)
	if err != nil {
		return int(n), s.failSent(ctx, "prune: delete old actions", err)
	}
	acts, err := res.RowsAffected()
	if err != nil {
		return int(n), s.fail("prune: delete old actions", err)
	}
	return int(n + acts), nil
}
