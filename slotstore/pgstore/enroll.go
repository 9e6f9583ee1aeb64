package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Enroll implements slotstore.Store: one call of the schema's enroll
// function, which inserts the generation rows of the jobs that have none,
// at the database's clock, begins anew those a restore wrote (see the
// package documentation), and returns every job's generation with the slot
// of its newest marker, in the same statement.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeJobs(p)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: enroll: %w", slotstore.ErrClosed)
	}
	out := make([]slotstore.Generation, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	conn, err := s.conn(ctx, "enroll")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.enroll, jobs)
	if err != nil {
		return nil, s.fail("enroll", err)
	}
	defer rows.Close()
	gens := make(map[string]slotstore.Generation, len(jobs))
	for rows.Next() {
		var (
			job    string
			at     time.Time
			newest *time.Time
		)
		if err := rows.Scan(&job, &at, &newest); err != nil {
			return nil, s.fail("enroll", err)
		}
		g := slotstore.Generation{Job: job, Born: at.UTC()}
		if newest != nil {
			g.Newest = newest.UTC()
		}
		gens[job] = g
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("enroll", err)
	}
	for i, job := range jobs {
		g, ok := gens[job]
		if !ok {
			return nil, fmt.Errorf("pgstore: enroll: no generation returned for job %q", job)
		}
		out[i] = g
	}
	return out, nil
}
