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
	putMarker    = `INSERT OR REPLACE INTO markers (` + columns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	nextFence    = `INSERT INTO fences (job, fence) VALUES (?, 1)
		ON CONFLICT (job) DO UPDATE SET fence = fence + 1 RETURNING fence`
	// selectRunning walks the partial index markers_running.
	selectRunning = `SELECT ` + columns + ` FROM markers WHERE job = ? AND state = 'running'`
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
	return s.batch(ctx, "claim", len(reqs), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		return st.claimAll(ctx, p.Replica, reqs, now)
	})
}

// Skip implements slotstore.Store, in one transaction as Claim.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := slotstore.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	return s.batch(ctx, "skip", len(reqs), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		out := make([]slotstore.ClaimResult, len(reqs))
		for i, r := range reqs {
			cur, err := st.get(ctx, r.Job, r.Slot)
			if err != nil {
				return nil, err
			}
			m, res, changed := slotstore.ApplySkip(cur, r, p.Replica, now)
			res.Marker = stored(m)
			if changed {
				if err := st.put(ctx, res.Marker); err != nil {
					return nil, err
				}
			}
			out[i] = res
		}
		return out, nil
	})
}

// batch runs fn, which decides n requests, in one BEGIN IMMEDIATE
// transaction and commits it.
func (s *Store) batch(ctx context.Context, op string, n int, fn func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error)) ([]slotstore.ClaimResult, error) {
	done, err := s.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer done()
	if n == 0 {
		return []slotstore.ClaimResult{}, nil
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.fail(op+": begin", err)
	}
	defer tx.Rollback()
	st, err := prepare(ctx, tx)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer st.close()
	// The clock is read once the write lock is held, so claims that follow
	// each other on the file see times that follow each other too.
	out, err := fn(st, s.clock())
	if err != nil {
		return nil, s.fail(op, err)
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := tx.Commit(); err != nil {
		return nil, s.failSent(ctx, op+": commit", err)
	}
	return out, nil
}

// stmts are the statements of a batch, prepared in its transaction.
type stmts struct {
	sel, ins, next, running *sql.Stmt
}

func prepare(ctx context.Context, tx *sql.Tx) (*stmts, error) {
	st := &stmts{}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{{&st.sel, selectMarker}, {&st.ins, putMarker}, {&st.next, nextFence}, {&st.running, selectRunning}} {
		stmt, err := tx.PrepareContext(ctx, p.query)
		if err != nil {
			st.close()
			return nil, err
		}
		*p.dst = stmt
	}
	return st, nil
}

func (st *stmts) close() {
	for _, stmt := range []*sql.Stmt{st.sel, st.ins, st.next, st.running} {
		if stmt != nil {
			stmt.Close()
		}
	}
}

// get returns the marker of job@slot, or nil when it has none.
func (st *stmts) get(ctx context.Context, job string, slot time.Time) (*slotstore.Marker, error) {
	m, err := scanMarker(st.sel.QueryRowContext(ctx, job, slot.Unix()))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &m, nil
}

// put writes m, which must be as the file keeps it (stored).
func (st *stmts) put(ctx context.Context, m slotstore.Marker) error {
	_, err := st.ins.ExecContext(ctx, markerArgs(m)...)
	return err
}

// runningOf returns the markers of job's running slots.
func (st *stmts) runningOf(ctx context.Context, job string) ([]slotstore.Marker, error) {
	rows, err := st.running.QueryContext(ctx, job)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []slotstore.Marker
	for rows.Next() {
		m, err := scanMarker(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// claimAll decides every request in order at time now. Each decision sees
// the markers the requests before it wrote.
func (st *stmts) claimAll(ctx context.Context, replica string, reqs []slotstore.ClaimRequest, now time.Time) ([]slotstore.ClaimResult, error) {
	out := make([]slotstore.ClaimResult, len(reqs))
	for i, r := range reqs {
		cur, err := st.get(ctx, r.Job, r.Slot)
		if err != nil {
			return nil, err
		}
		var running []slotstore.Marker
		if cur == nil && r.ChecksOverlap() {
			if running, err = st.runningOf(ctx, r.Job); err != nil {
				return nil, err
			}
		}
		d := slotstore.Decide(cur, r, now, running)
		var fence int64
		if d == slotstore.DecideWin || d == slotstore.DecideReplace {
			if err := st.next.QueryRowContext(ctx, r.Job).Scan(&fence); err != nil {
				return nil, err
			}
		}
		var base slotstore.Marker
		if cur != nil {
			base = *cur
		}
		m, res := slotstore.Apply(d, base, r, replica, fence, now)
		res.Marker = stored(m)
		if d != slotstore.DecideLose {
			if err := st.put(ctx, res.Marker); err != nil {
				return nil, err
			}
		}
		if d == slotstore.DecideReplace {
			for _, old := range slotstore.Supersede(running, m, now) {
				if err := st.put(ctx, stored(old)); err != nil {
					return nil, err
				}
				res.Replaced = append(res.Replaced, old.Ref())
			}
		}
		out[i] = res
	}
	return out, nil
}
