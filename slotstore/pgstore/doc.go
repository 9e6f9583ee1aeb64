// Package pgstore is a slotstore.Store kept in PostgreSQL, on pgx v5: slot
// markers with durable history, shared by replicas on any number of hosts,
// and completion of a run in the job's own transaction.
//
//	s, err := pgstore.New(ctx, pgstore.Options{DSN: os.Getenv("DATABASE_URL")})
//
// # Guarantees
//
// A claim batch is one statement and one round trip: a call of the
// schema's claim function, which runs in one transaction. The function
// first locks the fence row of every job of the batch, in job order,
// creating rows for new jobs; every claim and skip does this before it
// reads a marker, so claims of one job take turns, no other transaction
// creates a marker of the job meanwhile, fences grow in claim order, and
// two batches cannot deadlock: both take their locks in one global order,
// and the only other locks on markers are taken by single-row statements
// that wait for nothing else. It then reads the database clock
// (clock_timestamp) and decides the requests in order, each as
// slotstore.Decide and slotstore.Apply do: it locks the slot's marker row
// (SELECT ... FOR UPDATE, which under READ COMMITTED waits for a fenced
// mutation or a prune in progress and reads the row it left), decides, and
// writes: an INSERT for a slot without a marker, an UPDATE for a takeover,
// a claim of a released slot or a due retry, or an abandonment. A claim
// with an overlap policy that would create a slot's first marker reads the
// job's running markers (the partial index markers_running), which include
// those won earlier in the batch: forbid records the slot skipped if one
// runs under a live lease; replace makes them all replaced in one UPDATE,
// which locks each row and checks again that it is still running. Skip
// uses the same function, recording slots without a marker as skipped.
// The fence rows are raised at the end.
//
// Each job's winners take, in request order, the fences after the larger
// of the job's last fence and the database clock in microseconds since
// the Unix epoch. The counter is committed with the markers it fences, so
// fences survive restarts; the clock floor keeps them growing even if the
// counter falls back, as after a failover to a replica that had not yet
// received the latest commits (provided the new server's clock is not
// behind the old one's). Fences are therefore large numbers, and only
// their order means anything.
//
// Leases are judged by the database's clock only. Renew, Finish and Release
// are one conditional UPDATE each, matching only the running marker with
// the presented fence (Finish also matches one already done or retrying
// under that fence, and then writes back what it holds, as the contract
// requires). SetPause is one INSERT or DELETE in the pauses table.
// Under READ COMMITTED an UPDATE that waited for another transaction's row
// lock checks its condition again on the row that transaction left, so a
// check and its change are one atomic step.
//
// History and Pauses read without locks. Prune is one DELETE of the markers
// slotstore.Marker.Prunable allows, run only by the store holding the
// schema's transaction-scoped prune advisory lock (the others return 0 at
// once); it skips rows other transactions have locked, so it never waits
// for a claim or a job's transaction.
//
// # Transactional completion
//
// A job whose effect lives in the same database can make the effect and
// the slot's completion one transaction with CompleteTx:
//
//	tx, _ := pool.Begin(ctx)
//	defer tx.Rollback(ctx)
//	... write the effect with tx ...
//	if err := pgstore.CompleteTx(ctx, tx, run); err != nil {
//		return err // ErrLeaseLost: the slot was taken over; the effect rolls back
//	}
//	return tx.Commit(ctx)
//
// CompleteTx marks the slot done (succeeded) only while run.Fence is the
// slot's fence and the slot is running, and it keeps the marker's row
// locked until the transaction ends. A takeover that starts meanwhile
// waits, then finds the slot done (committed) or running under the old
// fence (rolled back) and takes it over. A stale holder's CompleteTx
// fails with slotstore.ErrLeaseLost and its effect rolls back with it: the
// effect commits exactly once, with the completion of the claim it
// belongs to. When the job returns, the engine's Finish for the run finds
// the slot done under its fence and succeeds without changing it.
//
// Keep the transaction short after CompleteTx: claims of the job wait for
// the marker's lock. A transaction that completes two runs whose leases
// have both expired, while a claim takes both over, can deadlock with that
// claim; the server detects it and aborts one of them, which changes
// nothing. A transaction at REPEATABLE READ or SERIALIZABLE may instead
// fail with a serialization error, which also changes nothing.
//
// # Failures
//
// A request that fails before it leaves (no connection, a context that
// already ended: pgconn.SafeToRetry), or that the server answers with an
// error (a statement timeout, a constraint), changed nothing: a plain error
// wrapping the cause. A context that ends, or a connection that breaks,
// while a request is in the server leaves its outcome unknown:
// slotstore.IsOutcomeUnknown reports true, and errors.Is still finds
// context.DeadlineExceeded or context.Canceled. A claim batch counts as done
// only when the server has confirmed its commit. DSNs never appear in
// errors with their passwords. After Close every method returns an error
// wrapping slotstore.ErrClosed.
//
// # Schema
//
// The tables live in Options.Schema ("slotcron"), created by embedded,
// versioned migrations (migrations/NNNN_*.sql) that New applies in one
// transaction holding a transaction-scoped advisory lock, so replicas
// starting together migrate once; a schema newer than the build is
// refused. Version 2:
//
//	schema_migrations (version)  one row per applied migration
//	fences (job)                 the last fence issued per job
//	markers                      one row per slot, the claim history
//	  job, slot                    unique index markers_by_job (job, slot DESC)
//	  state, holder, fence,        as slotstore.Marker; holder is the replica
//	  attempt, outcome, error,     (fence and attempt 0 only when skipped)
//	  reason, manual
//	  claimed_at, lease_end        database clock; lease_end is the retry's time when retrying
//	  keep_until, finished_at      slot + retention; set once neither running nor released
//	  duration_ns                  nanoseconds
//	  index markers_by_slot (slot DESC, job)          History of every job
//	  index markers_by_state (state, slot DESC, job)  History by state
//	  index markers_by_keep_until (keep_until)        Prune
//	  index markers_running (job, slot) WHERE state = 'running'
//	                                                  overlap: a job's running slots
//	pauses (job)                 what is paused; '' is the whole cluster
//	claim(...)                   the claim function (claims and skips); claim_result its rows
//
// The store takes two advisory lock keys per schema, derived from a hash
// of the schema name: one for migrations, one for pruning.
//
// Connections must run at READ COMMITTED, the server's default; New sets
// it for the pool it opens, and the claim function refuses any other
// level. Package pglock offers advisory locks that cannot leak, for
// users' own singleton work.
package pgstore
