package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// entryColumns are a catalog row's columns, of the table aliased c, in the
// order entryScan reads them.
const entryColumns = `c.job, c.fingerprint, c.body, c.revision, c.replica, c.since, c.carriers, c.past,
	c.run, c.version, c.seq, c.deleted`

// catalogSQL reads a page of the catalog table: the jobs after $1, only
// those of $2 unless it is null, at most $3, walking its primary key.
const catalogSQL = `SELECT ` + entryColumns + `
	FROM {schema}.catalog c
	WHERE c.job > $1 AND ($2::text[] IS NULL OR c.job = ANY ($2::text[]))
	ORDER BY c.job LIMIT $3`

// pastJSON is a spec in force before, as the catalog table's past column
// holds it (the enroll and write_schedules functions write it): times in
// microseconds since the epoch, by the database's clock.
type pastJSON struct {
	Fingerprint string `json:"fp"`
	Body        []byte `json:"body"`
	Revision    int64  `json:"rev"`
	Replica     string `json:"replica"`
	Since       int64  `json:"since_us"`
	Until       int64  `json:"until_us"`
}

// entryScan receives entryColumns, each of which may be null (a write of
// no schedule, or the changes of a store that has none).
type entryScan struct {
	job, fp, replica, run *string
	body                  []byte
	rev, version, seq     *int64
	since                 *time.Time
	carriers              map[string]int64
	past                  []pastJSON
	deleted               *bool
}

// dest returns the scan destinations of entryColumns.
func (x *entryScan) dest() []any {
	return []any{&x.job, &x.fp, &x.body, &x.rev, &x.replica, &x.since, &x.carriers, &x.past, &x.run, &x.version,
		&x.seq, &x.deleted}
}

// entry returns the entry scanned, and false (a zero entry) when the row
// had none.
func (x *entryScan) entry() (slotstore.CatalogEntry, bool) {
	if x.job == nil || x.fp == nil || x.rev == nil || x.replica == nil || x.since == nil || x.run == nil ||
		x.version == nil || x.seq == nil || x.deleted == nil {
		return slotstore.CatalogEntry{}, false
	}
	e := slotstore.CatalogEntry{Job: *x.job, Run: *x.run, Version: *x.version, Seq: *x.seq, Deleted: *x.deleted,
		InForce: slotstore.SpecRecord{Fingerprint: *x.fp, Body: bodyOf(x.body), Revision: *x.rev, Replica: *x.replica,
			Since: x.since.UTC()},
		Carriers: make(map[string]time.Time, len(x.carriers))}
	for r, us := range x.carriers {
		e.Carriers[r] = time.UnixMicro(us).UTC()
	}
	for _, p := range x.past {
		e.Past = append(e.Past, slotstore.SpecRecord{Fingerprint: p.Fingerprint, Body: bodyOf(p.Body), Revision: p.Revision,
			Replica: p.Replica, Since: time.UnixMicro(p.Since).UTC(), Until: time.UnixMicro(p.Until).UTC()})
	}
	return e, true
}

// Catalog implements slotstore.Store: one statement reads the page.
func (s *Store) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeCatalog(p)
	if err != nil {
		return nil, err
	}
	var jobs []string
	if len(p.Jobs) > 0 {
		jobs = p.Jobs
	}
	return s.entries(ctx, "catalog", s.q.catalog, p.After, jobs, p.Limit)
}

// entries runs query, whose rows are entryColumns, for op.
func (s *Store) entries(ctx context.Context, op, query string, args ...any) ([]slotstore.CatalogEntry, error) {
	conn, err := s.conn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer rows.Close()
	var out []slotstore.CatalogEntry
	for rows.Next() {
		var x entryScan
		if err := rows.Scan(x.dest()...); err != nil {
			return nil, s.fail(op, err)
		}
		e, ok := x.entry()
		if !ok {
			return nil, fmt.Errorf("pgstore: %s: a row without a job", op)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

// bodyOf is a spec's body as read back: nil when empty, as an enrolment
// without one gave it.
func bodyOf(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
