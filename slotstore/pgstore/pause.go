package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

const (
	// pauseSQL records a pause, or the note of one in force anew, at the
	// database's clock.
	pauseSQL = `INSERT INTO {schema}.pauses (job, paused_by, reason, paused_at)
		VALUES ($1, $2, $3, clock_timestamp())
		ON CONFLICT (job) DO UPDATE SET
			paused_by = EXCLUDED.paused_by, reason = EXCLUDED.reason, paused_at = EXCLUDED.paused_at`
	resumeSQL = `DELETE FROM {schema}.pauses WHERE job = $1`
	// pausesSQL reads a null paused_at for a pause that has no note.
	pausesSQL = `SELECT job, paused_by, reason, paused_at FROM {schema}.pauses ORDER BY job`
)

// SetPause implements slotstore.Store: one INSERT or DELETE in the pauses
// table, where the empty job stands for the whole cluster.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	if err := rules.ValidatePause(p); err != nil {
		return err
	}
	op := fmt.Sprintf("set pause of %q", p.Job)
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	sql, args := s.q.resume, []any{p.Job}
	if p.Paused {
		sql, args = s.q.pause, []any{p.Job, p.By, p.Reason}
	}
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Pauses implements slotstore.Store.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	out := slotstore.Pauses{Jobs: []string{}, Notes: map[string]slotstore.PauseNote{}}
	conn, err := s.conn(ctx, "pauses")
	if err != nil {
		return out, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.pauses)
	if err != nil {
		return out, s.readFail("pauses", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			job  string
			note slotstore.PauseNote
			at   *time.Time
		)
		if err := rows.Scan(&job, &note.By, &note.Reason, &at); err != nil {
			return out, s.readFail("pauses", err)
		}
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
		if at != nil {
			note.At = at.UTC()
			out.Notes[job] = note
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.readFail("pauses", err)
	}
	return out, nil
}
