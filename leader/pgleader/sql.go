package pgleader

import (
	_ "embed"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed sql/ensure.sql
var ensureTemplate string

// channel is the LISTEN/NOTIFY channel of every name; the payload says
// which name's lease was released.
const channel = "slotcron_leader"

// statements are the SQL of one schema.
type statements struct {
	ensure, claim, remaining, terminate, renew, release string
}

func statementsFor(schema string) statements {
	t := pgx.Identifier{schema, "leaders"}.Sanitize()
	h := fnv.New64a()
	h.Write([]byte("slotcron/leader-ddl\x00" + schema))
	return statements{
		ensure: strings.NewReplacer(
			"{schema}", pgx.Identifier{schema}.Sanitize(),
			"{lock}", strconv.FormatInt(int64(h.Sum64()), 10),
		).Replace(ensureTemplate),

		// Takes the name's row when its lease has ended by the database's
		// clock, or is this holder's own: a new fence, past the last one and
		// never below the clock in microseconds. $1 name, $2 holder, $3
		// lease (µs). No row: the lease has time left.
		claim: `INSERT INTO ` + t + ` AS r (name, fence, holder, pid, expires_at)
VALUES ($1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, $2, pg_backend_pid(),
        clock_timestamp() + $3::bigint * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE
  SET fence = greatest(r.fence + 1, EXCLUDED.fence), holder = EXCLUDED.holder,
      pid = EXCLUDED.pid, expires_at = EXCLUDED.expires_at
  WHERE r.expires_at <= clock_timestamp() OR r.holder = EXCLUDED.holder
RETURNING fence`,

		// The lease's time left (µs, negative once ended). $1 name.
		remaining: `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint
FROM ` + t + ` WHERE name = $1`,

		// Ends the session of a recorded leader whose lease has ended while
		// its session still holds the name's lock: a stalled or partitioned
		// leader, past its trust window. $1 name, $2 and $3 the lock key's
		// halves.
		terminate: `SELECT pg_terminate_backend(l.pid)
FROM pg_locks l JOIN ` + t + ` r ON r.pid = l.pid
WHERE r.name = $1 AND r.expires_at <= clock_timestamp()
  AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid::bigint = $2 AND l.objid::bigint = $3
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.pid <> pg_backend_pid()`,

		// Extends the lease held under the fence. $1 name, $2 fence, $3
		// holder, $4 lease (µs).
		renew: `UPDATE ` + t + ` SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
WHERE name = $1 AND fence = $2 AND holder = $3`,

		// Ends the lease held under the fence, drops the session's lock and
		// wakes the followers (NOTIFY is delivered at commit, when the row
		// is visible). $1 name, $2 fence, $3 holder, $4 channel, $5 payload.
		release: `WITH r AS (
  UPDATE ` + t + ` SET expires_at = clock_timestamp() WHERE name = $1 AND fence = $2 AND holder = $3 RETURNING 1
)
SELECT pg_advisory_unlock_all(), pg_notify($4, $5) FROM r`,
	}
}

// lockKey is the advisory lock of name in schema: a 64-bit hash, in a key
// space shared with every other user of the database (slotcron's stores
// hash other strings).
func lockKey(schema, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("slotcron/leader\x00" + schema + "\x00" + name))
	return int64(h.Sum64())
}
