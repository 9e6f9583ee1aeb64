// Package pgstore is a slotstore.Store kept in PostgreSQL, on pgx v5: slot
// markers with durable history, shared by replicas on any number of hosts,
// and completion of a run in the job's own transaction.
//
//	s, err := pgstore.Open(ctx, pgstore.Options{DSN: os.Getenv("DATABASE_URL")})
//
// Open makes the store's connection pool and closes it in Close; New takes
// a pool the caller made and still owns (slotstore's package documentation,
// under Constructors).
//
// # Guarantees
//
// A claim batch is one statement and one round trip: a call of the
// schema's claim function, which runs in one transaction. The function
// first locks the fence row of every job of the batch, in job order,
// creating rows for new jobs; every claim and skip does this before it reads
// a marker, so claims of one job take turns, no other transaction creates
// a marker of the job meanwhile, fences grow in claim order, and two
// batches cannot deadlock: both take their locks in one global order, and
// the only other locks on markers are taken by single-row statements that
// wait for nothing else. It then reads the database clock
// (clock_timestamp), begins the generations of the batch's claimed jobs
// that have none (see Generations), and decides in one set-based statement
// every request whose answer needs no lock on an existing marker: the
// first claim of a slot that has no marker (overlap allow, of a slot the
// generation covers, NotBefore passed, NotAfter not passed) is inserted there,
// with its fence; a
// slot held under a live lease (its marker locked with SKIP LOCKED, so one
// a mutation holds is left to the next step), finished, waiting for its
// retry, not yet due or absent is answered there. No other transaction can
// create a marker of a job whose fence row the claim holds, so a slot found
// without a marker stays so until the insert. A replica that finds the
// batch's first fence row locked (another replica is claiming the same
// slots) waits for that row alone, then looks: it reads again, locking no
// marker (a slot running under a live lease is held as committed, even if
// a mutation of it is in progress, which then comes after the claim), and
// answers without taking any other fence row when nothing is left to
// write; otherwise it takes the fence rows, holding no marker's lock, and
// decides again. The rest
// (takeovers, released slots, due retries, abandonments, overlap forbid,
// replace or queue, data loss, late first claims, skips that write, a slot
// named twice), with every
// request of a job that has such a request, so that a job's fences follow
// request order, is decided in request order,
// each as the decision table in Go does: it locks the slot's
// marker row (SELECT ... FOR UPDATE, which under READ COMMITTED waits for
// a fenced mutation, a prune or a job's transaction after CompleteTx in
// progress, and reads the row it left), decides, and writes: an INSERT for
// a slot without a marker, an UPDATE for a takeover, a claim of a released
// slot or a due retry, a backfill of a skipped slot (slotstore's package
// documentation, under Backfill; never decided by the set-based
// statement), or an abandonment. A batch that waits for no
// marker's lock is decided at that one instant; after a wait, the claim
// reads the clock again, so a lease that ended while it waited counts as
// ended. A claim that would create the first marker of a slot its job's
// generation does not cover (one less than slotstore.ClaimLead after the
// generation began, or older) records it skipped with
// slotstore.ReasonDataLoss.
// One that would create it, its NotBefore passed, once the database's clock
// has passed its NotAfter (the end of the slot's starting window) records
// it skipped with slotstore.ReasonLate, whatever else of the job runs, so a
// replica whose clock runs behind never starts a slot late by the
// database's; like NotBefore, NotAfter binds first markers alone (not
// takeovers, claims of released or retrying slots, nor a backfill's win of
// a skipped slot).
// A claim with an overlap policy that would create a slot's first marker, or
// a backfill with forbid of a skipped slot, reads the job's running markers
// (index markers_running, and those the batch won): forbid records the slot
// skipped if one runs under a live lease; queue writes nothing and answers
// Queued (a row in state "queued", lease_end their least lease end) while one
// runs under a live lease or an expired one a takeover may still win; replace
// makes them all replaced in one UPDATE, which locks each row and checks
// again that it is still running. Skip, the same function, records slots
// without a marker skipped, or nothing before their NotBefore by the
// database's clock (slotstore.NotYet). A winning claim stores the claimant's
// incarnation in the marker; the fence rows are raised at the end.
//
// Each job's winners take, in request order, the fences after the larger
// of the job's last fence and the database clock in microseconds since
// the Unix epoch. The counter is committed with the markers it fences, so
// fences survive restarts; the clock floor keeps them growing even if the
// counter falls back, as after a failover to a replica that had not yet
// received the latest commits, or a restore (provided the new server's
// clock is not behind the old one's). Fences are therefore large numbers,
// and only their order means anything.
//
// Leases are judged by the database's clock only. Renew is one call of the
// schema's renew function: an UPDATE of the running marker with the
// presented fence that sets its lease end to the lease after the time the
// server received the request (statement_timestamp), so a renewal that
// waited for the marker's lock extends the lease by no more than a lease
// from when it was sent; and, when it matched nothing, a second statement,
// on a snapshot taken after whatever the UPDATE waited for had ended, that
// tells a slot done or retrying under the fence (slotstore.ErrFinished)
// from a lost lease. Finish and Release are one conditional UPDATE each,
// matching only the running marker with the presented fence (Finish also
// matches one already done or retrying under that fence, and then writes
// back what it holds, as the contract requires). SetPause is one INSERT or
// DELETE in the pauses table; a pause records its note, at the database's
// clock, in the same row. Beat replaces the replica's row of the replicas
// table and deletes the rows past their TTL and slotstore.BeatKeep, in one
// round trip; Replicas is one statement that lists the others and deletes
// those. Both skip rows another transaction has locked, so they never wait
// for each other in a cycle. Under READ COMMITTED an UPDATE that waited
// for another transaction's row lock checks its condition again on the row
// that transaction left, so a check and its change are one atomic step.
//
// History and Pauses read without locks. Prune is one DELETE of the markers
// whose retention has ended and that are neither running under a live lease
// nor retrying before their retry is due, run only by the store holding the
// schema's transaction-scoped prune advisory lock (the others return 0 at
// once); it skips rows other transactions have locked, so it never waits for
// a claim or a job's transaction. Generations are never pruned.
//
// # Generations
//
// The generations table holds, per job, when the schema's knowledge of the
// job began (slotstore.Generation). Enroll is one call of the schema's
// enroll function, which inserts the rows of jobs that have none at the
// database's clock and returns every job's row; the claim function does the
// same for the jobs it claims, in the same transaction and after the fence
// locks, so a claim never decides on a generation another transaction is
// still writing. Both lock the rows in job order, so they never wait for
// each other in a cycle.
//
// Each row also records who wrote it: the writing transaction's id
// (pg_current_xact_id, 64 bits) and the cluster's system identifier
// (pg_control_system). A row this cluster's own enroll or claim wrote has a
// raw xmin equal to the low 32 bits of that id and the cluster's system
// identifier, for as long as it lives: VACUUM FREEZE, VACUUM FULL and
// CLUSTER keep a tuple's raw xmin (PostgreSQL 9.4 and later mark frozen
// tuples with flags instead of overwriting xmin), and comparing 32 bits
// ignores the epoch, which an xid wraparound advances. (An ALTER TABLE that
// rewrites the generations table, or pg_repack on it, writes new tuples: it
// begins every generation anew, which skips the slots then due that have no
// marker yet. Do not rewrite that table; it is small and never needs it.)
// Any other row is
// taken as written by someone else, and the next enroll or claim of the job
// begins its generation anew at the database's time then, so the claims of
// slots that have no marker and that the new generation does not cover
// (older than that time plus slotstore.ClaimLead, for a replica claims a
// slot from ClaimLead before it: slotstore.Generation.Covers) are recorded
// skipped for data loss instead of run; a backfill wins no skipped slot the
// generation does not cover. The claim function holds ClaimLead as a
// constant, v_lead, which a test keeps equal to slotstore.ClaimLead. What
// this detects, and what it does not:
//
//   - A schema dropped (or its generations rows deleted) and created again
//     by the migrations: detected; every job's generation begins at its
//     first enroll or claim after.
//   - A logical backup restored over the schema, or into another database
//     or cluster (pg_dump, then pg_restore or psql; COPY or INSERT): the
//     restored rows have the restoring transaction's xmin, and, in another
//     cluster, another system identifier: detected. Missed only when the
//     restoring transaction's 32-bit id equals the recorded one's in a
//     cluster with the same system identifier: in this cluster that takes a
//     multiple of 2^32 transactions between the two; in a physical copy of
//     it (which keeps the identifier), a coincidence of the two counters
//     after the copy was made.
//   - Anything else that writes a generations row (an operator's UPDATE):
//     taken as a restore, and begins the generation anew. So does a major
//     version upgrade, by dump and restore or by pg_upgrade (which keeps
//     xmin but gives the cluster a new system identifier): slots of the
//     jobs' past that have no marker when the upgraded store is first used
//     are recorded skipped for data loss, not caught up.
//   - Not detected: a physical backup (pg_basebackup, a file-system
//     snapshot) or point-in-time recovery restored to an earlier moment, a
//     failover to an asynchronous standby that had not received the latest
//     commits, and a restore, or a deletion, of the markers table alone:
//     the generations rows are the ones this cluster wrote, and markers
//     committed after the restored moment are lost without a trace. Fences
//     still grow (their clock floor), but a slot whose marker was lost this
//     way can run again. Use synchronous replication where that matters.
//
// Only first markers are checked: claims of slots that have a marker,
// takeover-only claims, terms (slotstore.ClaimRequest.Term) and skips are
// decided as before whatever the generation.
//
// # The catalog
//
// The catalog table holds one row per job some replica enrolled with a
// spec (slotstore's package documentation, The catalog): the spec in
// force in columns, its carriers and the specs in force before in jsonb.
// Enroll with specs is still one call of the enroll function (its seven
// argument form): in one transaction it locks each job's catalog row, in
// job order, applies the rule there as rules.Offer does, at the database's
// clock once the row is locked, then enrolls the jobs' generations, and
// returns each request's generation and spec in force. Without specs the
// same call reads each job's spec in force beside its generation. A claim
// or skip batch naming a spec reads, once its fence rows are locked, the
// catalog rows of the jobs it names a spec for, FOR SHARE in job order,
// and answers Superseded, changing nothing, to the requests whose spec is
// not in force; a batch naming none reads no catalog row. The catalog rows
// come after the fence rows and before the generation rows and markers in
// every transaction that locks them, so an enrolment that puts another
// spec in force and the claims of its job take turns, and none waits for
// another in a cycle. Catalog is one SELECT walking the table's primary
// key.
//
// # Schedules held as data
//
// A schedule held as data (slotstore's package documentation) is a row of
// the catalog table with run set (the job it runs), its version, the
// sequence number of its last write (seq) and whether it is deleted; a
// job of the configuration has an empty run.
//
// WriteSchedules validates the batch in Go, then is one call of the
// write_schedules function: one round trip and one transaction for up to
// slotstore.MaxScheduleWrites writes, each decided as rules.ApplyWrite
// does. The function first locks the one row of schedule_head, the newest
// sequence number handed out (SELECT ... FOR UPDATE), and holds it until
// the batch commits; then, in job order, it locks the job's catalog row (a
// primary key probe; a new schedule's row is inserted once its writes are
// decided, and decided again on the row an enrolment inserted first),
// applies the job's writes in request order at the database's clock and
// writes the row once; last it raises schedule_head, begins the
// generations of the jobs it changed that have none (the two-argument
// enroll, as Enroll does) and notifies the schema's channel. A batch's
// changes take consecutive sequence numbers, in job order (request order
// for one job), and become visible together at its commit.
//
// Why a row: a Postgres sequence hands numbers out in call order, not
// commit order, so a reader could pass a number that commits later and
// never see it. Holding the schedule_head row from a batch's start to its
// commit (a transaction-scoped advisory lock would do as well; the row
// also holds the head ScheduleChanges reads) means no number commits after
// a larger one. The cost: all schedule writes of the store take turns,
// batch by batch, some 20,000 new schedules a second in batches of 1,000
// on a test server (BenchmarkWriteSchedules), fewer in small batches, each
// of which pays a commit. Claims and enrolments never take the row; a
// write waits for them only on its own jobs' catalog and generation rows,
// and takes its locks in the order every text does (schedule_head, catalog
// rows, generation rows), so none waits for another in a cycle.
//
// An enrolment leaves a live schedule's row as it is (no spec takes force,
// no carrier); one of a deleted schedule's job makes the row the
// configuration's (run empty, deleted false, version and seq kept, no
// carrier), so its spec takes force. A delete puts the spec "deleted" in
// force: the claim function's catalog check supersedes the former spec.
//
// Schedules is one SELECT: with no job named it walks the partial index
// catalog_schedules (job) of the live schedules; with Run,
// catalog_schedules_by_run (run, job), its bounds written on (run, job) so
// that no plan walks every ID and filters; with IDs, one primary key probe
// an ID. A prefix is a range, job >= prefix AND job < the prefix with its
// last byte raised by one, which job's "C" collation orders bytewise (IDs
// are printable ASCII: a prefix with another byte lists nothing, without a
// query). A page costs the index descent and its Limit rows, whatever the
// number of schedules. ScheduleChanges is one SELECT of schedule_head's
// row (Head) and of the unique partial index catalog_by_seq after After:
// with nothing changed, one row and one index probe.
//
// WatchSchedules listens on the schema's channel (slotcron_schedules_ and
// a hash of the schema's name) on a connection of its own, made from the
// pool's config and hooks, never taken from the pool, and closed when the
// watch's context ends or the store closes. write_schedules notifies it
// once per batch that changed a schedule, delivered at commit. A cut
// connection is made again after a wait growing from 100 milliseconds to
// 5 seconds, and the watch then sends a notice, for writes may have come
// meanwhile; a connection silent for 30 seconds is pinged.
//
// # Transactional completion
//
// A job whose effect lives in the same database can make the effect and
// the slot's completion one transaction with CompleteTx:
//
//	tx, _ := pool.Begin(ctx)
//	defer tx.Rollback(ctx)
//	... write the effect with tx ...
//	if err := pgstore.CompleteTx(ctx, tx, run, pgstore.CompleteParams{}); err != nil {
//		return err // ErrLeaseLost: the slot was taken over; the effect rolls back
//	}
//	return tx.Commit(ctx)
//
// The run the scheduler hands the job carries the store its slot was
// claimed from (jobs.Run.Store), so CompleteTx finds the marker in that
// store's schema; a test builds such a run with jobs.Run.WithStore.
//
// CompleteTx marks the slot done (succeeded) only while run.Fence is the
// slot's fence and the slot is running, and it keeps the marker's row
// locked until the transaction ends. A takeover that starts meanwhile
// waits, then finds the slot done (committed) or running under the old
// fence (rolled back) and takes it over once the lease has expired. The
// engine's renewal of the run waits the same way, then returns
// slotstore.ErrFinished (committed), not a lost lease, or renews (rolled
// back). A stale holder's CompleteTx fails with slotstore.ErrLeaseLost
// and its effect rolls back with it: the effect commits exactly once, with
// the completion of the claim it belongs to. When the job returns, the
// engine's Finish for the run finds the slot done under its fence and
// succeeds without changing it.
//
// The rest of the transaction is bounded by the run's lease. CompleteTx
// reads what remains of the lease by the database's clock and sets
// idle_in_transaction_session_timeout and statement_timeout, for that
// transaction only (SET LOCAL), to that time (at least 250 milliseconds,
// and never more than the session's own settings). A holder that stalls
// after CompleteTx, its process frozen or its network gone, has its session
// ended by the server when its lease ends, and its transaction, effect and
// all, rolls back; the successor's takeover waits for no longer than the
// lease, plus a renewal interval if a renewal the holder sent before it
// stalled was waiting behind its transaction. The bound restarts with each
// statement and each idle spell, so CompleteTx must come last, just before
// Commit; a statement after it that runs past the bound is cancelled, and
// the transaction can then only roll back.
//
// A transaction that completes two runs whose leases have both expired,
// while a claim takes both over, can deadlock with that claim; the server
// detects it and aborts one of them, which changes nothing. A transaction
// at REPEATABLE READ or SERIALIZABLE may instead fail with a serialization
// error, which also changes nothing.
//
// # Failures
//
// A request that fails before it leaves (no connection, a context that
// already ended: pgconn.SafeToRetry), or that the server answers with an
// error (a statement timeout, a constraint), changed nothing: a plain error
// wrapping the cause. A context that ends, or a connection that breaks,
// while a request is in the server leaves its outcome unknown: the error
// wraps slotstore.ErrOutcomeUnknown (see Failures in slotstore's package
// documentation), and errors.Is still finds context.DeadlineExceeded or
// context.Canceled. A claim batch counts as done
// only when the server has confirmed its commit. A claim or skip whose
// context has a deadline sets lock_timeout and statement_timeout, for its
// transaction only and in the same round trip, to the time left less a
// tenth (at least a millisecond; the session's own setting when tighter): a
// claim that would wait past the deadline, for one lock or for several,
// fails in the server first (SQLSTATE 55P03 or 57014: a definite error,
// nothing changed, that errors.Is finds context.DeadlineExceeded in), so a
// claim whose client is gone, its cancel request lost with the connection,
// never wins a slot after its client gave up. DSNs never appear in
// errors with their passwords. After Close every method returns an error
// wrapping slotstore.ErrClosed.
//
// # The actions log
//
// AppendAction is one INSERT that takes the schema's actions advisory lock
// first, so appends commit one at a time in seq order (actions.go says why
// and what it costs). Actions is one SELECT over the primary key or a
// filter's index with seq; Prune's one statement deletes expired entries.
//
// # Schema
//
// The tables live in Options.Schema ("slotcron"). New brings the schema up
// to date in one transaction holding a transaction-scoped advisory lock,
// so replicas starting together do it once: first the tables, by
// embedded, versioned migrations (migrations/NNNN_*.sql), which change
// tables and types only; then the functions, each written out once, in
// functions/ (see Functions below). A schema newer than the build is
// refused.
//
// Privileges: a start that has something to do (the first start of a
// build whose tables or function texts the schema lacks, so every upgrade
// that changes them) runs DDL, and needs the schema's owner, or, while the
// schema does not exist, a role with CREATE on the database. Every other
// start runs no DDL, for it reads whether there is anything to do from
// schema_migrations and from the functions' comments in the catalogs, and
// needs only what the store's statements need: USAGE on the schema and
// SELECT, INSERT, UPDATE, DELETE on its tables (and EXECUTE on its
// functions, which PUBLIC has unless revoked). A role that lacks the
// privilege to apply what its build needs gets an error saying so: start
// the build once as the owner, then as that role (TestRestrictedRole). A
// grant ON ALL TABLES covers the tables that exist when it is made: after
// an upgrade whose migrations add a table, grant again (or set ALTER
// DEFAULT PRIVILEGES for the owner): version 10 added catalog, version 11
// schedule_head, version 12 actions. Version 12:
//
//	schema_migrations (version)  one row per applied migration
//	fences (job)                 the last fence issued per job
//	generations (job)            born (database clock), xid, sysid: see Generations
//	markers                      one row per slot, the claim history
//	  job, slot                    unique index markers_by_job (job, slot DESC)
//	  state, holder, fence,        as slotstore.Marker; holder is the replica
//	  attempt, outcome, error,     (fence and attempt 0 only when skipped)
//	  reason, manual, incarnation, backfill
//	  claimed_at, lease_end        database clock; lease_end is the retry's time when retrying
//	  keep_until, finished_at      slot + retention; set once neither running nor released
//	  duration_ns                  nanoseconds
//	  index markers_by_slot (slot DESC, job)          History of every job
//	  index markers_by_state (state, slot DESC, job)  History by state
//	  index markers_by_keep_until (keep_until)        Prune
//	  index markers_running (job, slot) WHERE state = 'running'
//	                                                  overlap: a job's running slots
//	pauses (job)                 what is paused; '' is the whole cluster
//	  paused_by, reason,           the pause's note; paused_at, database clock, is
//	  paused_at                    null for a pause recorded before version 7
//	replicas (replica)           each replica's last beat
//	  incarnation, version,        as slotstore.Beat; started null for none;
//	  started, duties, ttl_ns      duties jsonb
//	  seen, keep_until             database clock; seen + TTL + slotstore.BeatKeep
//	catalog (job)                the spec in force of each job enrolled with one (The catalog),
//	                             or of each schedule held as data
//	  fingerprint, body,           as slotstore.SpecRecord; since, database clock
//	  revision, replica, since
//	  carriers                     jsonb {"replica": microseconds since the epoch}, the 32 most recent
//	  past                         jsonb array, newest first, at most 32: fp, body (base64),
//	                               rev, replica, since_us, until_us
//	  run, version, seq, deleted   a schedule held as data's (run '' and seq 0 for none)
//	  index catalog_schedules (job) WHERE run <> '' AND NOT deleted
//	                                                  Schedules
//	  index catalog_schedules_by_run (run, job) WHERE run <> '' AND NOT deleted
//	                                                  Schedules with Run
//	  unique index catalog_by_seq (seq) WHERE seq > 0 ScheduleChanges
//	schedule_head (one)          one row: seq, the newest sequence number handed out
//	actions (seq)                the actions log, seq an identity: as slotstore.Action;
//	                             at, keep_until (at + retain) database clock
//	  index actions_by_who, _by_kind, _by_target (column, seq); actions_by_keep_until
//	claim(...)                   the claim function (claims and skips); claim_result its rows
//	claim(... less p_not_after)  the claim of the builds of versions 10 to 12 before NotAfter:
//	                               the one above, no NotAfter
//	claim(... less p_spec,       the claim of the builds of versions 8 and 9: the one above,
//	      p_not_after)             no spec, no NotAfter
//	claim(... less p_backfill,   the claim of the builds of versions 3 to 6: the one above,
//	      p_spec, p_not_after)     backfill false, no spec, no NotAfter
//	write_schedules(by, writes...) a batch of schedule writes (Schedules held as data)
//	enroll(jobs, now)            begins and returns generations
//	enroll(jobs, now, replica,   offers specs to the catalog, then enrolls; returns generations
//	       specs...)               and specs in force
//	renew(job, slot, fence, lease)  'renewed', 'finished' or 'lost'
//	                             each function's comment records its file: see Functions
//
// History by state, store-wide (the engine's read of running and retrying
// markers), walks markers_by_state from its state's first entry and stops
// after the limit: its cost follows the markers returned, not those held.
package pgstore
