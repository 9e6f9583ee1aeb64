// Package sqlitestore is the embedded default slotstore.Store: one SQLite
// file, shared by every replica on one host. It uses modernc.org/sqlite, so
// it needs no C compiler.
//
//	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: "slotcron.db"})
//
// Open opens the file and closes it in Close (slotstore's package
// documentation, under Constructors).
//
// # Guarantees
//
// Claim runs a whole batch in one BEGIN IMMEDIATE transaction: the
// transaction takes the file's write lock before it reads a marker, so no
// other claim, in this process or another, can change a marker between the
// read and the write. Inside it every request goes through the decision
// table in Go that memstore runs too (see slotstore's package
// documentation), and every winning claim takes the next value of its
// job's counter in the fences table. A claim with an overlap policy
// that would create a slot's first marker, or a backfill with forbid of a
// skipped slot, reads the job's running markers (the partial index
// markers_running) in the same transaction, so it sees the slots won
// earlier in its batch, and a replace claim rewrites the ones it supersedes
// there too. A backfill that wins a skipped slot rewrites its row as a
// first claim would write it (slotstore's package documentation, under
// Backfill). Skip is a batch of the same kind, deciding by
// the same table. A claim or skip naming a spec first reads its job's
// fingerprint in the catalog table, once per job per batch, in the same
// transaction; one that names another spec than the one in force is
// answered Superseded before anything else is read or written, so it
// issues no fence and begins no generation. A request naming no spec reads
// no more than it did before the catalog. The counter lives in the file and is
// incremented in the same transaction as the marker it fences, so fences grow
// in claim order and survive restarts. With synchronous=FULL a commit is on
// disk before Claim returns, so a fence once handed out is never issued again,
// even after a power loss.
//
// Renew, Finish and Release are single conditional UPDATEs that match only the
// running marker with the presented fence; when no row matches, a second
// read tells a slot done or retrying under that fence from a lost lease,
// and each answers as slotstore's package documentation says
// under "Fenced mutations". SetPause is one INSERT or DELETE in the pauses
// table; a pause records its note, with the store's time, in the same row.
// Enroll is one transaction too: per job it begins the generation, reads
// the newest marker and, with specs, reads the job's catalog row, applies
// the rule of The catalog (slotstore's package documentation) in Go and
// writes the row back unless the spec was refused; without specs it reads
// the spec in force alone. Catalog reads without the write lock, as
// History does. A Store that moves to a new file at its path (the old one
// deleted or replaced) finds the catalog that file holds, empty for a new
// one: until replicas enroll their specs in it again, no claim is checked.
// WriteSchedules is one transaction too (see Schedules held as data below).
// Beat replaces the replica's row of the beats table and deletes the rows
// past their TTL and slotstore.BeatKeep in one transaction; Replicas reads
// without the write lock, and takes it only to delete such rows.
//
// Leases are judged by the store's clock: time.Now of the calling process,
// unless Options.Clock replaces it, read once the write lock is held.
// Processes sharing a file share the host's clock, so they agree on expiry.
//
// # Schema
//
// PRAGMA user_version holds the schema version; Open applies the migrations
// a file lacks in one transaction and refuses a file newer than it knows.
// Version 7 (version 2 added generations and markers' incarnation, version
// 3 pause notes and beats, version 4 markers' backfill mark, version 5 the
// catalog table and beats' revision, version 6 the catalog's columns of
// schedules held as data and schedule_seq, version 7 the actions table,
// which no older build reads or writes). A build refuses a file newer
// than its own. One that opened a file before it was migrated goes on in
// it: a build of version 4 claims as before, as it never reads the
// catalog; a build of version 5 knows no schedule held as data and takes
// one for a job of the configuration, so an enrolment of a schedule's ID by
// such a build would put its own spec in force and clear the schedule's
// run: write schedules once every replica sharing the file runs a build of
// version 6.
//
//	markers (job, slot)        one row per slot; PRIMARY KEY (job, slot DESC)
//	  slot                       Unix seconds, UTC
//	  claimed_at, lease_end,     Unix milliseconds, store clock
//	  keep_until, finished_at    (finished_at 0 while running or released)
//	  state, holder, fence,      as slotstore.Marker
//	  attempt, outcome, error,
//	  reason, manual, backfill   (manual and backfill 0 or 1)
//	  duration_ns                nanoseconds
//	  index markers_by_slot (slot DESC, job)        History of every job
//	  index markers_by_state (state, slot DESC, job) History by state
//	  index markers_by_keep_until (keep_until)      Prune
//	  index markers_running (job, slot) WHERE state = 'running'
//	                                                overlap: a job's running slots
//	fences (job)               the last fence issued per job
//	generations (job)          born: when the file's record of the job began
//	pauses (job)               what is paused; '' is the whole cluster
//	  paused_by, reason,         the pause's note; paused_at, Unix milliseconds,
//	  paused_at                  is NULL for a pause recorded before version 3
//	beats (replica)            each replica's last beat
//	  incarnation, version,      as slotstore.Beat; started in Unix milliseconds,
//	  started, duties, ttl_ns,   0 for none; duties JSON
//	  revision
//	  seen, keep_until           Unix milliseconds, store clock; seen + TTL +
//	                             slotstore.BeatKeep
//	catalog (job)              the spec in force of a job enrolled with one
//	  fingerprint, body,         as slotstore.SpecRecord; since in Unix
//	  revision, replica, since   milliseconds, store clock
//	  carriers                   JSON object: replica -> Unix milliseconds
//	  past                       JSON array of the specs in force before,
//	                             newest first (rules.SpecJSON: times in Unix
//	                             milliseconds, body base64)
//	  run, version, seq,         a schedule held as data's (slotstore.CatalogEntry);
//	  deleted                    '' and 0 for a job of the configuration
//	  index catalog_by_run (run, job) WHERE run <> '' AND deleted = 0
//	                                                Schedules by run
//	  index catalog_schedules (job) WHERE run <> '' AND deleted = 0
//	                                                Schedules
//	  index catalog_by_seq (seq)                    ScheduleChanges
//	schedule_seq (id = 0)      seq: the newest schedule write's sequence
//	                           number; no row before the first write
//	actions (seq)              the actions log; seq INTEGER PRIMARY KEY
//	  at, keep_until             AUTOINCREMENT; Unix milliseconds, store clock
//	  who, role, via, kind,      as slotstore.Action; retain_ns nanoseconds
//	  target, reason, result,
//	  detail, retain_ns
//	  index actions_by_who (who, seq), actions_by_kind (kind, seq),
//	        actions_by_target (target, seq)          Actions with a filter
//	  index actions_by_keep_until (keep_until)       Prune
//
// History of one job walks the primary key; Prune is one DELETE of the
// markers whose retention has ended and that are neither running under a
// live lease nor retrying before their retry is due.
//
// # Schedules held as data
//
// A schedule is a catalog row whose run is set. WriteSchedules runs its
// batch in one BEGIN IMMEDIATE transaction, as Claim does: per write it
// reads the row (the primary key), applies rules.ApplyWrite in Go and, when
// the row changes, takes the next sequence number from schedule_seq,
// writes the row back and begins the job's generation if it has none (the
// statement Enroll uses), all in the transaction; one commit, one sync, per
// batch. An enrolment runs rules.Offer on the same row, so the rule for the
// ID of a live or deleted schedule is the one memstore keeps.
//
// Sequence numbers come from a one-row counter, not MAX(seq): either would
// be right, as SQLite lets one writer at a time hold the file and it
// commits before the next begins, so numbers are taken in the order the
// writes take effect and none commits below a number a reader has seen;
// the counter also never goes back when the row holding the newest number
// is rewritten by an enrolment, and reading it costs one row.
//
// Schedules reads without the write lock, in one SELECT over a partial
// index of the live schedules: catalog_by_run (run, job) when the call
// names a Run, catalog_schedules (job) when it does not. After and Prefix
// are the bounds of the index's range (a prefix ends before the string
// that follows every string with it), so a page reads the index entries and
// rows it returns and no others: O(log n + Limit) with a million schedules,
// whatever the deleted schedules and the configuration's jobs. IDs look
// each ID up in the primary key.
//
// ScheduleChanges reads without the write lock in two statements: the head
// (one row of schedule_seq by its key), then, only when the head is past
// After, the rows of catalog_by_seq in (After, head], at most Limit. When
// nothing changed, the poll replicas make every second or two is that one
// row (and the stat of the file every read makes). The head read first
// bounds the page, so a reader may move its cursor to the head of a page
// shorter than Limit without skipping a write that committed between the
// two statements.
//
// The store implements no slotstore.ScheduleWatcher: SQLite has no way to
// tell another process that the file changed, and the poll costs one
// indexed row, so replicas poll ScheduleChanges.
//
// The sequence lives in the file. A Store that moves to a new file at its
// path (the old one deleted or replaced, see Several processes, one file)
// finds that file's counter, lower than the one readers followed when the
// file is new or an older copy: a reader whose cursor is past the head
// reads every schedule again, as slotstore's Changes says, but one that
// polls only after writes to the new file carried its head past its
// cursor misses them. Replacing the file under running replicas loses
// schedules as it loses markers.
//
// # The actions log
//
// AppendAction is one INSERT in a BEGIN IMMEDIATE transaction, as a claim
// batch is: one commit and one sync per entry; the clock is read once the
// write lock is held, so Seq and At follow the order appends take the file,
// across processes. AUTOINCREMENT never hands a seq out twice, even after
// Prune deleted the newest rows. Actions reads without the write lock, in
// one SELECT walking the primary key back from Before, or the index of a
// filter's column with seq: O(log n + Limit) when the filters that walk
// does not serve (a second column, Since) pass most entries, and up to
// every entry below Before when they pass few. Prune is one DELETE over
// actions_by_keep_until. A Store that moves to a new file (Several
// processes, one file) finds that file's log, as it finds its markers.
//
// # Several processes, one file
//
// Every connection runs in WAL mode with a busy timeout: readers (History)
// never wait for the writer, and writers queue for the write lock, in this
// process on a channel and across processes on SQLite's lock, for up to the
// busy timeout. A writer that waits longer fails with an error wrapping
// ErrBusy and has changed nothing. WAL needs shared memory between the
// processes, so the file must be on a local file system, not a network
// share; Open fails when WAL cannot be enabled.
//
// # Failures
//
// A claim whose context ends while it commits, or a fenced mutation whose
// context ends while its statement runs, may or may not have taken effect:
// its error wraps slotstore.ErrOutcomeUnknown (see Failures in slotstore's
// package documentation). A context that ends before the write began
// returns its plain error, and a failed batch rolls back as a whole. After Close every method returns an
// error wrapping slotstore.ErrClosed.
package sqlitestore
