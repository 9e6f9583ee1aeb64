package pgstore

import (
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// columns lists a marker's columns in the order scanMarker reads them.
const columns = `job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until,
	finished_at, outcome, error, duration_ns, reason, manual, incarnation, backfill`

// Every fenced mutation is one statement at the database's clock about the
// slot $1 job, $2 slot, $3 fence: it changes the row only while the slot is
// running under the presented fence, and no row matched means the lease is
// lost. Under READ COMMITTED an UPDATE that waited for another
// transaction's lock on the row checks its condition again on the row that
// transaction left, so the check and the change are one atomic step.
const (
	// renewSQL calls the schema's renew function (functions/renew.sql), which
	// answers 'renewed', 'finished' (done or retrying under the fence) or
	// 'lost'.
	renewSQL = `SELECT {schema}.renew($1, $2, $3, $4)`
	// finishSQL makes the slot done, or retrying until $7 when $7 is not
	// null. It also matches a slot already done or retrying under the
	// fence, and then writes back what it holds: a Finish retried after a
	// lost reply, or after CompleteTx, succeeds and changes nothing.
	finishSQL = `UPDATE {schema}.markers AS m SET
			state       = CASE WHEN m.state <> 'running' THEN m.state
			                   WHEN $7::timestamptz IS NULL THEN 'done' ELSE 'retrying' END,
			outcome     = CASE WHEN m.state = 'running' THEN $4 ELSE m.outcome END,
			error       = CASE WHEN m.state = 'running' THEN $5 ELSE m.error END,
			duration_ns = CASE WHEN m.state = 'running' THEN $6 ELSE m.duration_ns END,
			finished_at = CASE WHEN m.state = 'running' THEN c.t ELSE m.finished_at END,
			lease_end   = CASE WHEN m.state = 'running' THEN coalesce($7::timestamptz, c.t) ELSE m.lease_end END
		FROM (SELECT clock_timestamp() AS t) c
		WHERE m.job = $1 AND m.slot = $2 AND m.fence = $3 AND m.state IN ('running', 'done', 'retrying')`
	releaseSQL = `UPDATE {schema}.markers AS m SET state = 'released', lease_end = c.t
		FROM (SELECT clock_timestamp() AS t) c
		WHERE m.job = $1 AND m.slot = $2 AND m.fence = $3 AND m.state = 'running'`
)

// queries are the statements of one schema.
type queries struct {
	claim, enroll, renew, finish, release             string
	historyOfJob, historyOfAll, historyInState, prune string
	pause, resume, pauses                             string
	beat, dropBeats, replicas                         string
	catalog                                           string
	writeSchedules, changes                           string
	appendAction                                      string
	schedulesAll, schedulesByRun, schedulesByIDs      string
	// channel is the schema's channel of schedule writes (watch.go).
	channel string
}

func newQueries(schema string) queries {
	in := func(sql string) string { return strings.ReplaceAll(sql, "{schema}", schema) }
	return queries{
		// clock_timestamp() is read for each row once the function has
		// made every row (a set-returning function's rows are all made
		// first): after every decision of the batch (batch.read).
		claim: in(`SELECT ord, won, prev_holder, retry, ` + columns + `, replaced_slots, replaced_fences, now,
			coalesce(superseded, false), clock_timestamp()
			FROM {schema}.claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`),
		// enroll also reads each job's newest slot from markers_by_job
		// (job, slot DESC): one index probe a job.
		enroll: in(`SELECT g.ord, g.job, g.born,
			(SELECT max(m.slot) FROM {schema}.markers m WHERE m.job = g.job COLLATE "C"),
			g.fingerprint, g.body, g.revision, g.replica, g.since
			FROM {schema}.enroll($1, clock_timestamp(), $2, $3, $4, $5, $6) g`),
		catalog: in(catalogSQL),

		writeSchedules: in(writeSchedulesSQL),
		changes:        in(changesSQL),
		schedulesAll:   in(schedulesAllSQL),
		schedulesByRun: in(schedulesByRunSQL),
		schedulesByIDs: in(schedulesByIDsSQL),
		channel:        channelOf(schema),

		pause:   in(pauseSQL),
		resume:  in(resumeSQL),
		pauses:  in(pausesSQL),
		renew:   in(renewSQL),
		finish:  in(finishSQL),
		release: in(releaseSQL),
		// historyOfJob walks markers_by_job (job, slot DESC).
		historyOfJob: in(`SELECT ` + columns + ` FROM {schema}.markers WHERE job = $1 AND slot < $3
			ORDER BY slot DESC LIMIT $2`),
		// historyOfAll walks markers_by_slot (slot DESC, job).
		historyOfAll: in(`SELECT ` + columns + ` FROM {schema}.markers WHERE slot < $2 ORDER BY slot DESC, job LIMIT $1`),
		// historyInState walks markers_by_state (state, slot DESC, job).
		historyInState: in(`SELECT ` + columns + ` FROM {schema}.markers
			WHERE state = $1 AND ($2 = '' OR job = $2) AND slot < $4 ORDER BY slot DESC, job LIMIT $3`),
		prune:        in(pruneSQL),
		appendAction: in(appendActionSQL),

		beat:      in(beatSQL),
		dropBeats: in(dropBeatsSQL),
		replicas:  in(replicasSQL),
	}
}

// scanner is a pgx.Row or pgx.Rows.
type scanner interface{ Scan(dest ...any) error }

// markerDest returns scan destinations for columns, and a func that
// completes m once the scan has filled them.
func markerDest(m *slotstore.Marker) ([]any, func()) {
	var (
		state, outcome string
		finished       *time.Time
		durNS          int64
	)
	dest := []any{&m.Job, &m.Slot, &state, &m.Holder, &m.Fence, &m.Attempt, &m.ClaimedAt, &m.LeaseEnd,
		&m.KeepUntil, &finished, &outcome, &m.Error, &durNS, &m.Reason, &m.Manual, &m.Incarnation, &m.Backfill}
	return dest, func() {
		m.State, m.Outcome, m.Duration = slotstore.State(state), slotstore.Outcome(outcome), time.Duration(durNS)
		m.Slot, m.ClaimedAt, m.LeaseEnd, m.KeepUntil = m.Slot.UTC(), m.ClaimedAt.UTC(), m.LeaseEnd.UTC(), m.KeepUntil.UTC()
		if finished != nil {
			m.FinishedAt = finished.UTC()
		}
	}
}

// scanMarker reads one row of columns.
func scanMarker(r scanner) (slotstore.Marker, error) {
	var m slotstore.Marker
	dest, done := markerDest(&m)
	if err := r.Scan(dest...); err != nil {
		return m, err
	}
	done()
	return m, nil
}

// micros is d in whole microseconds, rounded up so that a positive lease
// never becomes zero.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// key names a slot in errors: the run key.
func key(job string, slot time.Time) string {
	return job + "@" + slot.UTC().Truncate(time.Second).Format(time.RFC3339)
}
