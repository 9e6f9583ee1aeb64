package sqlitestore

import (
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// columns lists a marker's columns in the order scanMarker and markerArgs use.
const columns = `job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until,
	finished_at, outcome, error, duration_ns, reason, manual, incarnation, backfill`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanMarker reads one row of columns.
func scanMarker(r scanner) (slotstore.Marker, error) {
	var (
		m                                                   slotstore.Marker
		slot, claimed, leaseEnd, keepUntil, finished, durNS int64
		state, outcome                                      string
	)
	err := r.Scan(&m.Job, &slot, &state, &m.Holder, &m.Fence, &m.Attempt, &claimed, &leaseEnd, &keepUntil,
		&finished, &outcome, &m.Error, &durNS, &m.Reason, &m.Manual, &m.Incarnation, &m.Backfill)
	if err != nil {
		return m, err
	}
	m.Slot = time.Unix(slot, 0).UTC()
	m.State, m.Outcome, m.Duration = slotstore.State(state), slotstore.Outcome(outcome), time.Duration(durNS)
	m.ClaimedAt, m.LeaseEnd, m.KeepUntil = fromMillis(claimed), fromMillis(leaseEnd), fromMillis(keepUntil)
	m.FinishedAt = fromMillis(finished)
	return m, nil
}

// markerArgs returns m's values in the order of columns.
func markerArgs(m slotstore.Marker) []any {
	return []any{
		m.Job, m.Slot.Unix(), string(m.State), m.Holder, m.Fence, m.Attempt,
		millis(m.ClaimedAt), millis(m.LeaseEnd), millis(m.KeepUntil), millis(m.FinishedAt),
		string(m.Outcome), m.Error, int64(m.Duration), m.Reason, m.Manual, m.Incarnation, m.Backfill,
	}
}

// stored returns m as the file keeps it: times to the millisecond, in UTC.
func stored(m slotstore.Marker) slotstore.Marker {
	m.ClaimedAt, m.LeaseEnd = fromMillis(millis(m.ClaimedAt)), fromMillis(millis(m.LeaseEnd))
	m.KeepUntil, m.FinishedAt = fromMillis(millis(m.KeepUntil)), fromMillis(millis(m.FinishedAt))
	return m
}

// millis is t in Unix milliseconds; the zero time is 0.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMillis is the inverse of millis, in UTC.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// key names a slot in errors: the run key.
func key(job string, slot time.Time) string {
	return fmt.Sprintf("%s@%s", job, slot.UTC().Truncate(time.Second).Format(time.RFC3339))
}
