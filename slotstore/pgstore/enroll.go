package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Enroll implements slotstore.Store: one call of the schema's enroll
// function, which, with specs, first offers each job's spec to the catalog
// (the rule of The catalog, in the same transaction), then inserts the
// generation rows of the jobs that have none, at the database's clock,
// begins anew those a restore wrote (see the package documentation), and
// returns every job's generation with the slot of its newest marker and
// its spec in force, in the same statement.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeEnroll(p)
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
	rows, err := conn.Query(ctx, s.q.enroll, enrollArgs(jobs, p)...)
	if err != nil {
		return nil, s.fail("enroll", err)
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		i, g, err := scanGeneration(rows, len(jobs))
		if err != nil {
			return nil, s.fail("enroll", err)
		}
		out[i] = g
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("enroll", err)
	}
	if got != len(jobs) {
		return nil, fmt.Errorf("pgstore: enroll: %d generations returned for %d jobs", got, len(jobs))
	}
	return out, nil
}

// enrollArgs are the enroll function's arguments: the jobs, and, with
// specs, the replica and each job's spec, one array a field; without, nulls.
func enrollArgs(jobs []string, p slotstore.EnrollParams) []any {
	if p.Specs == nil {
		return []any{jobs, nil, nil, nil, nil, nil}
	}
	n := len(p.Specs)
	fps, bodies, revs, sups := make([]string, n), make([][]byte, n), make([]int64, n), make([]string, n)
	for i, sp := range p.Specs {
		fps[i], bodies[i], revs[i], sups[i] = sp.Fingerprint, sp.Body, sp.Revision, sp.Supersedes
	}
	return []any{jobs, p.Replica, fps, bodies, revs, sups}
}

// scanGeneration reads one row of the enroll query, the answer to request
// i of n.
func scanGeneration(rows pgx.Rows, n int) (int, slotstore.Generation, error) {
	var (
		ord      int32
		g        slotstore.Generation
		newest   *time.Time
		fp, repl *string
		body     []byte
		rev      *int64
		since    *time.Time
	)
	if err := rows.Scan(&ord, &g.Job, &g.Born, &newest, &fp, &body, &rev, &repl, &since); err != nil {
		return 0, g, err
	}
	if ord < 1 || int(ord) > n {
		return 0, g, fmt.Errorf("generation for request %d of %d", ord, n)
	}
	g.Born = g.Born.UTC()
	if newest != nil {
		g.Newest = newest.UTC()
	}
	if fp != nil {
		g.Spec = slotstore.SpecRecord{Fingerprint: *fp, Body: bodyOf(body), Revision: *rev, Replica: *repl, Since: since.UTC()}
	}
	return int(ord) - 1, g, nil
}
