package pgstore

import (
	"context"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
)

// SetPause implements slotstore.Store: one INSERT or DELETE in the pauses
// table, where the empty job stands for the whole cluster.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	op := fmt.Sprintf("set pause of %q", p.Job)
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	sql := s.q.resume
	if p.Paused {
		sql = s.q.pause
	}
	if _, err := conn.Exec(ctx, sql, p.Job); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Pauses implements slotstore.Store.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	out := slotstore.Pauses{Jobs: []string{}}
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
		var job string
		if err := rows.Scan(&job); err != nil {
			return out, s.readFail("pauses", err)
		}
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.readFail("pauses", err)
	}
	return out, nil
}
