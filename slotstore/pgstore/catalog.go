package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// catalogSQL reads a page of the catalog table: the jobs after $1, only
// those of $2 unless it is null, at most $3, walking its primary key.
const catalogSQL = `SELECT c.job, c.fingerprint, c.body, c.revision, c.replica, c.since, c.carriers, c.past
	FROM {schema}.catalog c
	WHERE c.job > $1 AND ($2::text[] IS NULL OR c.job = ANY ($2::text[]))
	ORDER BY c.job LIMIT $3`

// pastJSON is a spec in force before, as the catalog table's past column
// holds it (the enroll function writes it): times in microseconds since
// the epoch, by the database's clock.
type pastJSON struct {
	Fingerprint string `json:"fp"`
	Body        []byte `json:"body"`
	Revision    int64  `json:"rev"`
	Replica     string `json:"replica"`
	Since       int64  `json:"since_us"`
	Until       int64  `json:"until_us"`
}

// Catalog implements slotstore.Store: one statement reads the page.
func (s *Store) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeCatalog(p)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: catalog: %w", slotstore.ErrClosed)
	}
	var jobs []string
	if len(p.Jobs) > 0 {
		jobs = p.Jobs
	}
	conn, err := s.conn(ctx, "catalog")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.catalog, p.After, jobs, p.Limit)
	if err != nil {
		return nil, s.fail("catalog", err)
	}
	defer rows.Close()
	var out []slotstore.CatalogEntry
	for rows.Next() {
		var (
			e        slotstore.CatalogEntry
			carriers map[string]int64
			past     []pastJSON
		)
		f := &e.InForce
		if err := rows.Scan(&e.Job, &f.Fingerprint, &f.Body, &f.Revision, &f.Replica, &f.Since, &carriers, &past); err != nil {
			return nil, s.fail("catalog", err)
		}
		f.Body, f.Since = bodyOf(f.Body), f.Since.UTC()
		e.Carriers = make(map[string]time.Time, len(carriers))
		for r, us := range carriers {
			e.Carriers[r] = time.UnixMicro(us).UTC()
		}
		for _, x := range past {
			e.Past = append(e.Past, slotstore.SpecRecord{Fingerprint: x.Fingerprint, Body: bodyOf(x.Body), Revision: x.Revision,
				Replica: x.Replica, Since: time.UnixMicro(x.Since).UTC(), Until: time.UnixMicro(x.Until).UTC()})
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("catalog", err)
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
