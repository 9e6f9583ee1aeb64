package sqlitestore

import (
	"context"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	pauseJob  = `INSERT OR IGNORE INTO pauses (job) VALUES (?)`
	resumeJob = `DELETE FROM pauses WHERE job = ?`
	allPauses = `SELECT job FROM pauses ORDER BY job`
)

// SetPause implements slotstore.Store: one statement in the pauses table,
// where the empty job stands for the whole cluster.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	op := fmt.Sprintf("set pause of %q", p.Job)
	done, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer done()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", op, err)
	}
	query := resumeJob
	if p.Paused {
		query = pauseJob
	}
	if _, err := s.conn().ExecContext(ctx, query, p.Job); err != nil {
		return s.failSent(ctx, op, err)
	}
	return nil
}

// Pauses implements slotstore.Store. It reads without taking the write lock.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	out := slotstore.Pauses{Jobs: []string{}}
	if s.closed.Load() {
		return out, fmt.Errorf("sqlitestore: pauses: %w", slotstore.ErrClosed)
	}
	db, done, err := s.read(ctx, "pauses")
	if err != nil {
		return out, err
	}
	defer done()
	rows, err := db.QueryContext(ctx, allPauses)
	if err != nil {
		return out, s.fail("pauses", err)
	}
	defer rows.Close()
	for rows.Next() {
		var job string
		if err := rows.Scan(&job); err != nil {
			return out, s.fail("pauses", err)
		}
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.fail("pauses", err)
	}
	return out, nil
}
