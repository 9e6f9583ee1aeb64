package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

const (
	// pauseJob records a pause, or records the note of one in force anew.
	pauseJob = `INSERT INTO pauses (job, paused_by, reason, paused_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (job) DO UPDATE SET
			paused_by = excluded.paused_by, reason = excluded.reason, paused_at = excluded.paused_at`
	resumeJob = `DELETE FROM pauses WHERE job = ?`
	// allPauses reads paused_at NULL for a pause recorded before notes
	// were kept.
	allPauses = `SELECT job, paused_by, reason, paused_at FROM pauses ORDER BY job`
)

// SetPause implements slotstore.Store: one statement in the pauses table,
// where the empty job stands for the whole cluster. A pause's note has the
// store's time.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	if err := rules.ValidatePause(p); err != nil {
		return err
	}
	op := fmt.Sprintf("set pause of %q", p.Job)
	done, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer done()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", op, err)
	}
	query, args := resumeJob, []any{p.Job}
	if p.Paused {
		query, args = pauseJob, []any{p.Job, p.By, p.Reason, s.clock().UnixMilli()}
	}
	if _, err := s.conn().ExecContext(ctx, query, args...); err != nil {
		return s.failSent(ctx, op, err)
	}
	return nil
}

// Pauses implements slotstore.Store. It reads without taking the write lock.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	out := slotstore.Pauses{Jobs: []string{}, Notes: map[string]slotstore.PauseNote{}}
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
		var (
			job  string
			note slotstore.PauseNote
			at   sql.NullInt64
		)
		if err := rows.Scan(&job, &note.By, &note.Reason, &at); err != nil {
			return out, s.fail("pauses", err)
		}
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
		if at.Valid {
			note.At = fromMillis(at.Int64)
			out.Notes[job] = note
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.fail("pauses", err)
	}
	return out, nil
}
