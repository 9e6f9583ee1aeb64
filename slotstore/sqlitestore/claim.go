package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

const (
	selectMarker = `SELECT ` + columns + ` FROM markers WHERE job = ? AND slot = ?`
	putMarker    = `INSERT OR REPLACE INTO markers (` + columns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// nextFence issues the job's next fence: past the last one and never
	// below the store's clock in microseconds, so a file deleted or
	// replaced, whose counters start again, still issues fences above every
	// one issued before (guarantee 2).
	nextFence = `INSERT INTO fences (job, fence) VALUES (?1, max(?2, 1))
		ON CONFLICT (job) DO UPDATE SET fence = max(fence + 1, ?2) RETURNING fence`
	// bornOf begins the job's generation at ?2 if it has none, and returns
	// it.
	bornOf = `INSERT INTO generations (job, born) VALUES (?1, ?2)
		ON CONFLICT (job) DO UPDATE SET born = born RETURNING born`
	// selectNewest walks the primary key (job, slot DESC).
	selectNewest = `SELECT slot FROM markers WHERE job = ? ORDER BY slot DESC LIMIT 1`
	// selectRunning walks the partial index markers_running.
	selectRunning = `SELECT ` + columns + ` FROM markers WHERE job = ? AND state = 'running'`
)

// Claim implements slotstore.Store. The whole batch is one BEGIN IMMEDIATE
// transaction: it holds the file's write lock from its first read to its
// commit, so the markers it decides on cannot change under it, and its fences
// are issued in request order.
func (s *Store) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeClaims(p.Requests)
	if err != nil {
		return nil, err
	}
	out, err := s.batch(ctx, "claim", len(reqs), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		return st.claimAll(ctx, p, reqs, now)
	})
	if err != nil {
		return nil, err
	}
	// Read after the commit, as the answer leaves: every decision of the
	// batch read the clock before it.
	return rules.Answered(out, s.clock()), nil
}

// Skip implements slotstore.Store, in one transaction as Claim.
func (s *Store) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	reqs, err := rules.NormalizeSkips(p.Requests)
	if err != nil {
		return nil, err
	}
	return s.batch(ctx, "skip", len(reqs), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		refused, err := st.refusals(ctx, len(reqs), func(i int) (string, string) { return reqs[i].Job, reqs[i].Spec })
		if err != nil {
			return nil, err
		}
		out := make([]slotstore.ClaimResult, len(reqs))
		for i, r := range reqs {
			if refused[i] {
				out[i] = rules.Superseded(r.Job, r.Slot)
				continue
			}
			cur, err := st.get(ctx, r.Job, r.Slot)
			if err != nil {
				return nil, err
			}
			m, res, changed := rules.ApplySkip(cur, r, p.Replica, now)
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

	tx, err := s.conn().BeginTx(ctx, nil)
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

// Enroll implements slotstore.Store, in one transaction as Claim: with
// specs, each job's enrolment and the offer of its spec to the catalog
// (catalog.go) are in it.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeEnroll(p)
	if err != nil {
		return nil, err
	}
	var out []slotstore.Generation
	_, err = s.batch(ctx, "enroll", len(jobs), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		out = make([]slotstore.Generation, len(jobs))
		for i, j := range jobs {
			born, err := st.bornOf(ctx, j, now)
			if err != nil {
				return nil, err
			}
			out[i] = slotstore.Generation{Job: j, Born: born}
			newestOf, err := st.prepared(ctx, &st.newest, selectNewest)
			if err != nil {
				return nil, err
			}
			var newest int64
			switch err := newestOf.QueryRowContext(ctx, j).Scan(&newest); {
			case err == nil:
				out[i].Newest = time.Unix(newest, 0).UTC()
			case !errors.Is(err, sql.ErrNoRows):
				return nil, err
			}
			var sp *slotstore.Spec
			if p.Specs != nil {
				sp = &p.Specs[i]
			}
			if out[i].Spec, err = st.offer(ctx, j, sp, p.Replica, now); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []slotstore.Generation{}
	}
	return out, nil
}

// stmts are the statements of a batch, prepared in its transaction.
type stmts struct {
	sel, ins, next, running, born *sql.Stmt
	// Prepared by their first use (prepared): the statements only Enroll
	// and WriteSchedules run, and spec, which only a request naming a spec
	// does.
	newest, inForce, entry, putEntry, spec, seq *sql.Stmt
	tx                                          *sql.Tx              // the batch's transaction
	borns                                       map[string]time.Time // the batch's generations, read on first use
	specs                                       map[string]string    // the batch's specs in force, read on first use
}

func prepare(ctx context.Context, tx *sql.Tx) (*stmts, error) {
	st := &stmts{tx: tx}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{{&st.sel, selectMarker}, {&st.ins, putMarker}, {&st.next, nextFence}, {&st.running, selectRunning}, {&st.born, bornOf}} {
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
	for _, stmt := range []*sql.Stmt{st.sel, st.ins, st.next, st.running, st.born, st.newest, st.inForce, st.entry, st.putEntry, st.spec, st.seq} {
		if stmt != nil {
			stmt.Close()
		}
	}
}

// prepared returns *dst, preparing query into it on first use.
func (st *stmts) prepared(ctx context.Context, dst **sql.Stmt, query string) (*sql.Stmt, error) {
	if *dst == nil {
		stmt, err := st.tx.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		*dst = stmt
	}
	return *dst, nil
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

// bornOf returns when job's generation began, beginning it at now if it
// has none.
func (st *stmts) bornOf(ctx context.Context, job string, now time.Time) (time.Time, error) {
	if b, ok := st.borns[job]; ok {
		return b, nil
	}
	var ms int64
	if err := st.born.QueryRowContext(ctx, job, now.UnixMilli()).Scan(&ms); err != nil {
		return time.Time{}, err
	}
	if st.borns == nil {
		st.borns = map[string]time.Time{}
	}
	b := fromMillis(ms)
	if ms == 0 {
		b = time.Unix(0, 0).UTC()
	}
	st.borns[job] = b
	return b, nil
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
func (st *stmts) claimAll(ctx context.Context, p slotstore.ClaimParams, reqs []slotstore.ClaimRequest, now time.Time) ([]slotstore.ClaimResult, error) {
	refused, err := st.refusals(ctx, len(reqs), func(i int) (string, string) { return reqs[i].Job, reqs[i].Spec })
	if err != nil {
		return nil, err
	}
	out := make([]slotstore.ClaimResult, len(reqs))
	for i, r := range reqs {
		// A refused request is decided before anything is read or begun:
		// no generation, no fence.
		if refused[i] {
			out[i] = rules.Superseded(r.Job, r.Slot)
			continue
		}
		cur, err := st.get(ctx, r.Job, r.Slot)
		if err != nil {
			return nil, err
		}
		var running []slotstore.Marker
		if rules.ReadsRunning(cur, rules.Effective(r, now)) {
			if running, err = st.runningOf(ctx, r.Job); err != nil {
				return nil, err
			}
		}
		born, err := st.bornOf(ctx, r.Job, now)
		if err != nil {
			return nil, err
		}
		d := rules.Decide(cur, r, now, born, running)
		var fence int64
		if d == rules.DecideWin || d == rules.DecideReplace {
			if err := st.next.QueryRowContext(ctx, r.Job, now.UnixMicro()).Scan(&fence); err != nil {
				return nil, err
			}
		}
		var base slotstore.Marker
		if cur != nil {
			base = *cur
		}
		m, res := rules.Apply(d, base, r, p.Replica, p.Incarnation, fence, now)
		if d == rules.DecideQueue {
			// Nothing changes; the answer holds the job and slot alone.
			res.Remaining = rules.QueueWait(running, r, now, born)
		} else {
			res.Marker = stored(m)
		}
		if d.Changes() {
			if err := st.put(ctx, res.Marker); err != nil {
				return nil, err
			}
		}
		if d == rules.DecideReplace {
			for _, old := range rules.Supersede(running, m, now) {
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
