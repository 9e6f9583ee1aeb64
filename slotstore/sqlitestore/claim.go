package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	selectMarker = `SELECT ` + columns + ` FROM markers WHERE job = ? AND slot = ?`
	putMarker    = `INSERT OR REPLACE INTO markers (` + columns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	nextFence    = `INSERT INTO fences (job, fence) VALUES (?, 1)
		ON CONFLICT (job) DO UPDATE SET fence = fence + 1 RETURNING fence`
)

// Claim implements slotstore.Store. The whole batch is one BEGIN IMMEDIATE
// transaction: it holds the file's write lock from its first read to its
// commit, so the markers it decides on cannot change under it, and its fences
// are issued in request order.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := slotstore.NormalizeAll(p.Requests)
	if err != nil {
		return nil, err
	}
	done, err := s.begin(ctx, "claim")
	if err != nil {
		return nil, err
	}
	defer done()
	if len(reqs) == 0 {
		return []slotstore.ClaimResult{}, nil
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.fail("claim: begin", err)
	}
	defer tx.Rollback()
	// The clock is read once the write lock is held, so claims that follow
	// each other on the file see times that follow each other too.
	out, err := claimAll(ctx, tx, p.Replica, reqs, s.clock())
	if err != nil {
		return nil, s.fail("claim", err)
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := tx.Commit(); err != nil {
		return nil, s.failSent(ctx, "claim: commit", err)
	}
	return out, nil
}

// claimAll decides every request in order inside tx at time now.
func claimAll(ctx context.Context, tx *sql.Tx, replica string, reqs []slotstore.ClaimRequest, now time.Time) ([]slotstore.ClaimResult, error) {
	get, err := tx.PrepareContext(ctx, selectMarker)
	if err != nil {
		return nil, err
	}
	defer get.Close()
	put, err := tx.PrepareContext(ctx, putMarker)
	if err != nil {
		return nil, err
	}
	defer put.Close()
	next, err := tx.PrepareContext(ctx, nextFence)
	if err != nil {
		return nil, err
	}
	defer next.Close()

	out := make([]slotstore.ClaimResult, len(reqs))
	for i, r := range reqs {
		var cur *slotstore.Marker
		m, err := scanMarker(get.QueryRowContext(ctx, r.Job, r.Slot.Unix()))
		switch {
		case err == nil:
			cur = &m
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
		d := slotstore.Decide(cur, r, now)
		var fence int64
		if d == slotstore.DecideWin {
			if err := next.QueryRowContext(ctx, r.Job).Scan(&fence); err != nil {
				return nil, err
			}
		}
		m, res := slotstore.Apply(d, m, r, replica, fence, now)
		res.Marker = stored(m)
		if d != slotstore.DecideLose {
			if _, err := put.ExecContext(ctx, markerArgs(res.Marker)...); err != nil {
				return nil, err
			}
		}
		out[i] = res
	}
	return out, nil
}
