package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// CompleteParams is what CompleteTx records with the slot's success.
type CompleteParams struct {
	// Duration is how long the run took, as slotstore.FinishParams.Duration;
	// zero records none. The engine's own Finish after a committed
	// CompleteTx changes nothing, so this is the duration history shows.
	Duration time.Duration
}

// completeFloor is the least time CompleteTx leaves the rest of the
// transaction, however little of the lease remains.
const completeFloor = 250 * time.Millisecond

// completeSQL is CompleteTx's one statement. cur locks the running marker
// of the fence (waiting, under READ COMMITTED, for a transaction that holds
// it, and reading the row that one left) and keeps its lease end; done
// marks it succeeded, running only, since a slot already done means its
// effect was already committed once; bound is what remains of the lease by
// the database's clock after the update, at least $5 milliseconds, and no
// more than the session's own idle_in_transaction_session_timeout and
// statement_timeout when those are set; the select sets both to it for the
// rest of the transaction (set_config with is_local, as SET LOCAL). It
// returns 0 when nothing matched, and 2 otherwise.
const completeSQL = `WITH cur AS MATERIALIZED (
		SELECT m.lease_end, pg_catalog.clock_timestamp() AS t FROM {schema}.markers m
		WHERE m.job = $1 AND m.slot = $2 AND m.fence = $3 AND m.state = 'running'
		FOR NO KEY UPDATE
	),
	done AS (
		UPDATE {schema}.markers AS m
		SET state = 'done', outcome = 'succeeded', error = '', duration_ns = $4, finished_at = cur.t, lease_end = cur.t
		FROM cur
		WHERE m.job = $1 AND m.slot = $2 AND m.fence = $3 AND m.state = 'running'
		RETURNING least(greatest(ceil(extract(epoch FROM cur.lease_end - pg_catalog.clock_timestamp()) * 1000), $5),
			2147483647)::bigint AS ms
	),
	bound AS (
		SELECT s.name, CASE WHEN s.setting::bigint = 0 THEN d.ms ELSE least(s.setting::bigint, d.ms) END AS ms
		FROM done d, pg_catalog.pg_settings s
		WHERE s.name IN ('idle_in_transaction_session_timeout', 'statement_timeout')
	)
	SELECT count(pg_catalog.set_config(b.name, b.ms::text, true)) FROM bound b`

// CompleteTx marks run's slot succeeded inside tx, the job's own
// transaction, so that the job's effect and the slot's completion commit
// together or not at all. It succeeds only while run.Fence is the slot's
// fence and the slot is running; otherwise it changes nothing and returns an
// error wrapping slotstore.ErrLeaseLost, and the caller must roll tx back:
// the slot was taken over, and the effect belongs to the new holder.
//
// CompleteTx locks the slot's marker until tx ends, so a takeover that
// starts meanwhile waits for tx and then sees the slot done (tx committed)
// or running under the old fence (tx rolled back). The engine's renewal of
// the run's lease waits for tx too, and then returns slotstore.ErrFinished
// (committed) or renews the lease (rolled back); never ErrLeaseLost.
//
// The rest of tx is bounded by the run's lease: CompleteTx reads what
// remains of the lease by the database's clock as it marks the slot done,
// and sets idle_in_transaction_session_timeout and
// statement_timeout, for the rest of tx only (SET LOCAL), to that time, at
// least 250 milliseconds, and no more than the session's own settings. If
// the holder then stalls (its process frozen, its host paused, its network
// gone), the server itself ends its session when the lease ends and rolls
// tx back, effect and all, so a successor's takeover waits for no longer
// than the lease. The bound restarts with every statement and every idle
// spell: call CompleteTx last, just before Commit, and keep anything after
// it short. A statement after it that runs past the bound is cancelled, and
// tx can then only roll back. Once tx has committed, the engine's own
// Finish for the run succeeds and changes nothing: Finish of a slot already
// done under its fence is a no-op, as the slotstore contract requires.
//
// tx must be a transaction on the database holding the store. run is the
// jobs.Run the engine handed the job: CompleteTx finds the slot's marker in
// the store run.Store returns, which must be a *Store (the scheduler sets
// it with jobs.Run.WithStore); a Run without one is an error wrapping
// slotstore.ErrInvalid, and so is one from another kind of store.
func CompleteTx(ctx context.Context, tx pgx.Tx, run jobs.Run, p CompleteParams) error {
	ref := slotstore.Ref{Job: run.Job, Slot: run.Slot.UTC().Truncate(time.Second), Fence: run.Fence}
	op := fmt.Sprintf("complete %s fence %d", key(ref.Job, ref.Slot), ref.Fence)
	if err := rules.ValidateRef(ref); err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	st, _ := run.Store().(*Store)
	if st == nil {
		return fmt.Errorf("pgstore: %s: %w: the run's store is %T, not a *pgstore.Store (see jobs.Run.WithStore)",
			op, slotstore.ErrInvalid, run.Store())
	}
	sql := strings.ReplaceAll(completeSQL, "{schema}", quote(st.schema))
	var set int64
	err := tx.QueryRow(ctx, sql, ref.Job, ref.Slot, ref.Fence, int64(p.Duration), completeFloor.Milliseconds()).Scan(&set)
	if err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if set == 0 {
		return fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrLeaseLost)
	}
	return nil
}
