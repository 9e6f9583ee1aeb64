package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// The catalog table (schema version 5) keeps a row per job enrolled with a
// spec or written as a schedule (schedules.go, columns of version 6): the
// spec in force in columns, its carriers and past specs as JSON.
// An enrolment applies rules.Offer to the row in its batch's transaction;
// a claim or skip naming a spec reads the row's fingerprint in its own.
const (
	catalogColumns = `job, fingerprint, body, revision, replica, since, carriers, past, run, version, seq, deleted`
	// selectSpec reads the fingerprint of a job's spec in force alone: the
	// check of a claim or skip that names a spec.
	selectSpec = `SELECT fingerprint FROM catalog WHERE job = ?`
	// selectInForce reads a job's spec in force, for an enrolment without
	// specs, which answers it but needs neither carriers nor past specs.
	selectInForce = `SELECT fingerprint, body, revision, replica, since FROM catalog WHERE job = ?`
	selectEntry   = `SELECT ` + catalogColumns + ` FROM catalog WHERE job = ?`
	putEntry      = `INSERT OR REPLACE INTO catalog (` + catalogColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// catalogPage walks the primary key from the job after which the page
	// begins.
	catalogPage = `SELECT ` + catalogColumns + ` FROM catalog WHERE job > ?1 ORDER BY job LIMIT ?2`
	// catalogOfJobs looks the jobs of the JSON array ?3 up in the primary
	// key.
	catalogOfJobs = `SELECT ` + catalogColumns + ` FROM catalog
		WHERE job > ?1 AND job IN (SELECT value FROM json_each(?3)) ORDER BY job LIMIT ?2`
)

// offer applies the enrolment of job's spec sp (nil for an enrolment
// without specs, which changes nothing) by replica at now, and returns the
// job's spec in force after it (its Fingerprint empty when it has none).
func (st *stmts) offer(ctx context.Context, job string, sp *slotstore.Spec, replica string, now time.Time) (slotstore.SpecRecord, error) {
	if sp == nil {
		return st.inForceOf(ctx, job)
	}
	cur, err := st.entryOf(ctx, job)
	if err != nil {
		return slotstore.SpecRecord{}, err
	}
	e, took := rules.Offer(cur, job, *sp, replica, now)
	if cur != nil && cur.Run != "" && !cur.Deleted {
		return e.InForce, nil // a live schedule held as data: rules.Offer left it as it was
	}
	if !took && e.InForce.Fingerprint != sp.Fingerprint && (cur == nil || len(e.Carriers) == len(cur.Carriers)) {
		return e.InForce, nil // refused, the enroller no carrier of it: the entry stays as it was
	}
	if err := st.putEntryOf(ctx, e); err != nil {
		return slotstore.SpecRecord{}, err
	}
	return e.InForce, nil
}

// entryOf returns job's catalog entry, nil when it has none.
func (st *stmts) entryOf(ctx context.Context, job string) (*slotstore.CatalogEntry, error) {
	stmt, err := st.prepared(ctx, &st.entry, selectEntry)
	if err != nil {
		return nil, err
	}
	switch e, err := scanEntry(stmt.QueryRowContext(ctx, job)); {
	case err == nil:
		return &e, nil
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	default:
		return nil, fmt.Errorf("read the catalog entry of %s: %w", job, err)
	}
}

// putEntryOf writes e as its job's catalog row.
func (st *stmts) putEntryOf(ctx context.Context, e slotstore.CatalogEntry) error {
	stmt, err := st.prepared(ctx, &st.putEntry, putEntry)
	if err != nil {
		return err
	}
	args, err := entryArgs(e)
	if err != nil {
		return fmt.Errorf("write the catalog entry of %s: %w", e.Job, err)
	}
	if _, err := stmt.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("write the catalog entry of %s: %w", e.Job, err)
	}
	return nil
}

// inForceOf returns job's spec in force, the zero record when it has none.
func (st *stmts) inForceOf(ctx context.Context, job string) (slotstore.SpecRecord, error) {
	stmt, err := st.prepared(ctx, &st.inForce, selectInForce)
	if err != nil {
		return slotstore.SpecRecord{}, err
	}
	var j rules.EntryJSON
	f := &j.InForce
	switch err := stmt.QueryRowContext(ctx, job).Scan(&f.Fingerprint, &f.Body, &f.Revision, &f.Replica, &f.Since); {
	case errors.Is(err, sql.ErrNoRows):
		return slotstore.SpecRecord{}, nil
	case err != nil:
		return slotstore.SpecRecord{}, fmt.Errorf("read the spec in force of %s: %w", job, err)
	}
	return rules.FromJSON(job, j).InForce, nil
}

// refusals returns the indexes of the n requests of a claim or skip batch
// that the spec check refuses (specAllows), nil when it refuses none; req
// returns the job and the spec of request i. No claim or skip changes a
// spec in force, so the batch may check its requests before it decides
// any.
func (st *stmts) refusals(ctx context.Context, n int, req func(i int) (job, spec string)) (map[int]bool, error) {
	var out map[int]bool
	for i := range n {
		job, spec := req(i)
		ok, err := st.specAllows(ctx, job, spec)
		if err != nil {
			return nil, err
		}
		if !ok {
			if out == nil {
				out = map[int]bool{}
			}
			out[i] = true
		}
	}
	return out, nil
}

// specAllows reports whether a claim or skip of job naming spec may act
// (rules.SpecAllows). A request naming no spec reads nothing; the others
// read the job's fingerprint once per batch.
func (st *stmts) specAllows(ctx context.Context, job, spec string) (bool, error) {
	if spec == "" {
		return true, nil
	}
	fp, ok := st.specs[job]
	if !ok {
		stmt, err := st.prepared(ctx, &st.spec, selectSpec)
		if err != nil {
			return false, err
		}
		if err := stmt.QueryRowContext(ctx, job).Scan(&fp); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("read the spec in force of %s: %w", job, err)
		}
		if st.specs == nil {
			st.specs = map[string]string{}
		}
		st.specs[job] = fp
	}
	return rules.SpecAllows(fp, spec), nil
}

// Catalog implements slotstore.Store. It reads without taking the write
// lock, as History does.
func (s *Store) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeCatalog(p)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlitestore: catalog: %w", slotstore.ErrClosed)
	}
	db, done, err := s.read(ctx, "catalog")
	if err != nil {
		return nil, err
	}
	defer done()
	var rows *sql.Rows
	if len(p.Jobs) == 0 {
		rows, err = db.QueryContext(ctx, catalogPage, p.After, p.Limit)
	} else {
		jobs, _ := json.Marshal(p.Jobs) // a []string always marshals
		rows, err = db.QueryContext(ctx, catalogOfJobs, p.After, p.Limit, string(jobs))
	}
	if err != nil {
		return nil, s.fail("catalog", err)
	}
	out, err := scanEntries(rows)
	if err != nil {
		return nil, s.fail("catalog", err)
	}
	return out, nil
}

// scanEntry reads one row of catalogColumns.
func scanEntry(r scanner) (slotstore.CatalogEntry, error) {
	var (
		j              rules.EntryJSON
		job            string
		carriers, past []byte
	)
	f := &j.InForce
	err := r.Scan(&job, &f.Fingerprint, &f.Body, &f.Revision, &f.Replica, &f.Since, &carriers, &past,
		&j.Run, &j.Version, &j.Seq, &j.Deleted)
	if err != nil {
		return slotstore.CatalogEntry{}, err
	}
	if err := json.Unmarshal(carriers, &j.Carriers); err != nil {
		return slotstore.CatalogEntry{}, fmt.Errorf("catalog entry of %s: carriers: %w", job, err)
	}
	if err := json.Unmarshal(past, &j.Past); err != nil {
		return slotstore.CatalogEntry{}, fmt.Errorf("catalog entry of %s: past specs: %w", job, err)
	}
	return rules.FromJSON(job, j), nil
}

// entryArgs returns e's values in the order of catalogColumns.
func entryArgs(e slotstore.CatalogEntry) ([]any, error) {
	j := rules.ToJSON(e)
	carriers, err := json.Marshal(j.Carriers)
	if err != nil {
		return nil, err
	}
	past, err := json.Marshal(j.Past)
	if err != nil {
		return nil, err
	}
	body := j.InForce.Body
	if body == nil {
		body = []byte{} // the column is NOT NULL
	}
	f := j.InForce
	return []any{e.Job, f.Fingerprint, body, f.Revision, f.Replica, f.Since, string(carriers), string(past),
		e.Run, e.Version, e.Seq, e.Deleted}, nil
}
