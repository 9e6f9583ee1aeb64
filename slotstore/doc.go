// Package slotstore is the contract between the slotcron engine and the
// stores that hold slot markers: the Store interface, its parameter and result
// types, and its errors. Backends live in subpackages (memstore, sqlitestore,
// redisstore, pgstore, etcdstore); storetest is the conformance suite they
// all pass.
//
// # Markers
//
// A slot is (job, instant). The store keeps one marker per slot, created by
// the first claim (or by Skip) and kept until its retention ends. A marker
// moves through these states:
//
//	        claim (first)                  finish
//	(none) ───────────────▶ running ─────────────────────────────▶ done (succeeded | failed | timeout)
//	  │                     │ ▲  ▲ │ │ │
//	  │ claim with forbid   │ │  └─┘ │ │ lease expired, then claim: attempt+1, new fence
//	  │ while another slot  │ │      │ │
//	  │ runs; or Skip       │ │      │ └─ lease expired, then claim with on_crash skip
//	  ▼             release │ │      │    or attempts spent ───────────────────▶ abandoned
//	skipped                 ▼ │      └─ another slot claimed with replace ─────▶ replaced
//	                 released │
//	                        └─┘ claim: attempt+1, new fence
//
//	running ── finish failed or timeout, with RetryAt ──▶ retrying
//	retrying ── claim at or after RetryAt ──▶ running (attempt+1, new fence)
//	skipped ── backfill claim ──▶ running (attempt 1, new fence)
//
// done, abandoned, skipped and replaced are final (State.Final): no claim
// ever wins the slot again while the marker is retained (guarantee 3), but
// for the one way back from skipped a backfill takes (Backfill below).
//
// # Policies
//
// The policies a claim carries are package policy's types. OnCrash
// (ClaimRequest.OnCrash) decides what a claim does with a slot running under
// an expired lease: policy.OnCrashRetry takes it over, policy.OnCrashSkip
// marks it abandoned (Reason "on_crash skip"). With policy.OnCrashRetry, a
// claim whose takeover would make attempt MaxAttempts+1 marks it abandoned
// instead (Reason "max attempts").
//
// Overlap (ClaimRequest.Overlap) is judged only when a claim would create
// the slot's first marker; takeovers, claims of released slots and retries
// are never checked. policy.OverlapForbid records the slot skipped
// (ReasonOverlap, Fence 0, no fence issued) while another slot of the job
// is running under a live lease, including one won earlier in the same
// batch. policy.OverlapReplace wins the slot and makes every other running
// slot of the job, live lease or expired, replaced (Reason "replaced by "
// and the winner's slot): its lease ends, its fence stays, and its holder's
// Renew, Finish and Release fail with ErrLeaseLost; ClaimResult.Replaced
// lists them. policy.OverlapQueue changes nothing while another slot of
// the job runs under a live lease, one won earlier in the same batch
// included, or under an expired lease that a takeover may still win: the
// claim's OnCrash is retry, attempts are left (MaxAttempts 0 or above that
// marker's Attempt) and the marker was claimed at or after the job's
// generation began (or the claim is a Term claim), for a marker claimed
// before is abandoned for data loss, never taken over. The claim answers
// Queued, with Marker holding the job and slot only and Remaining the
// least time left on those leases by the store's clock, 0 when only
// expired ones hold it back; it writes no marker and issues no fence, and
// the same claim made again once no such run is left wins as any first
// claim does. So a queued slot never starts beside the takeover of a slot
// whose holder crashed. A running slot whose expired lease no takeover may
// win (on_crash skip, attempts spent, or claimed before the generation)
// does not hold it back. A backfill never queues (ErrInvalid): the engine
// claims it with forbid.
//
// A failed or timed-out run may ask for a retry (FinishParams.RetryAt): the
// slot waits in state retrying, claims before RetryAt answer Waiting and
// change nothing, and the first claim at or after it wins with attempt+1, a
// new fence and Claim.Retry set, whatever its OnCrash and MaxAttempts: the
// caller bounds retries. A takeover-only claim may take a due retry.
//
// Skip records slots the caller decided not to run (missed, caught up)
// with a reason, so history shows them; a slot that already has a marker
// is left alone. Pauses (SetPause, Pauses) are stored beside the markers so
// every replica reads the same ones, each with a note of who set it, when
// by the store's clock, and why (Pauses.Notes). Replicas say they are alive
// with Beat, which stands for its TTL by the store's clock; Replicas lists
// the beats, live or not, for BeatKeep after their TTL, and the store
// deletes older ones. Beats are for people: no guarantee rests on them. A
// manual trigger's claim sets ClaimRequest.Manual, which the marker keeps
// (Marker.Manual).
//
// # Backfill
//
// A slot skipped because no replica ran it in time (an outage longer than
// its starting deadline, a catch-up policy) never ran, and an operator may
// run it after all: a claim with ClaimRequest.Backfill set wins a skipped
// slot as if its marker were not there, once, and otherwise claims as any
// claim does. It wins only a slot that surely never ran: not one skipped
// for ReasonDataLoss, nor one older than its job's generation (either may
// have run before a loss of data), nor one whose skip was recorded before
// the generation began (a marker a restored backup brought back: the slot
// may have been backfilled since). The winner holds the slot as a first
// claim would (attempt 1, a fence above every fence of the job, and
// Marker.Backfill set, which its takeovers keep, as a backfill's claim of a
// slot with no marker sets it too), so a second backfill finds it held, then finished, and a repeated backfill of
// a range is safe beside running replicas. With policy.OverlapForbid it
// waits for the job's other runs: while one holds a live lease, it changes
// nothing and answers Skipped. Before its NotBefore it changes nothing and
// answers NotYet, as a first claim does. A backfill never replaces and is
// never a Term (ErrInvalid).
//
// Once the store's clock has reached Slot + Retain, a backfill neither wins
// a skipped slot nor creates a marker: markers are kept only until then, so
// a slot with none may have run and had its marker pruned, and a marker
// the backfill made would be due for pruning at once. Such a claim is a
// TakeoverOnly claim without Backfill: a slot with no marker answers
// Absent, and one with a marker is answered as an ordinary claim would be
// (a skipped one loses).
//
// The rule on skips recorded before the generation began protects against
// a restore only where the restore begins a new generation: a Postgres
// logical dump and restore, or a Redis that lost its generation keys. After
// a Redis RDB restore, a SQLite file copy, or a Postgres physical or
// point-in-time restore, the generations come back with the markers, and a
// slot backfilled since the backup, whose skipped marker the copy brings
// back, may run again.
//
// # Generations: what a store that lost its data may not do
//
// A store can lose what it knew: a Redis restarted with no persistence, or
// flushed; a failover to a replica that missed the last writes; a database
// file deleted or replaced by an older copy; a schema dropped. Its markers
// are gone, and a claim of a slot that already ran would find no marker and
// win it again. So every store keeps, per job, a Generation: when its record
// of the job began. Replicas Enroll their jobs at start-up, which begins the
// generation of a job the store has never seen; a claim of a job with no
// generation begins one at the store's time then — which, for a job a
// replica enrolled before, means the store lost it. The check is in the same
// atomic step as the claim: a claim that would create the first marker of a
// slot the generation does not cover (Generation.Covers) does not win; the
// slot is recorded skipped with ReasonDataLoss, because the store cannot
// know whether it ran. Claims of slots that still have a marker, and
// takeover-only claims, are unaffected; so is a Term claim (a duty's
// standing lease), which a new generation must be able to win. A brand-new
// store or job therefore never runs a slot from before it was first
// enrolled: catch-up has nothing to catch up for a job the cluster never
// ran.
//
// What a generation cannot see is a loss the store does not notice: a
// failover that keeps a job's generation record but loses a few of its
// newest markers (Redis replicates asynchronously; see redisstore's
// wait_replicas), or a database restored from an older copy by a process
// that never had the newer one open. Each backend's doc says what it
// detects.
//
// # The catalog: one spec in force per job
//
// A replica enrolls each job with its Spec: a fingerprint of everything
// that decides which slots exist and how they are claimed, and that
// content. The store keeps, per job, the spec in force (with the replica
// whose enrolment put it in force and when, by the store's clock), its
// carriers (the replicas whose latest enrolment of the job named it, with
// when), and the specs in force before (Catalog). Claims and skips name the spec
// they are made under (ClaimRequest.Spec, SkipRequest.Spec); the store
// checks it in the same atomic step as the claim: a request naming a spec
// that is not the job's spec in force changes nothing and answers
// Superseded. So no marker is ever created, taken over or retried under a
// spec that is not in force when it is, and a replica whose spec lost
// learns it at its next claim. A request naming no spec, or of a job with
// no spec in force, is not checked.
//
// An enrolment of spec S for a job whose spec in force is F:
//
//   - no spec in force: S takes force;
//   - S is F (same fingerprint): nothing changes but the carrier's time,
//     and F's revision, raised to S's when S's is higher (a deploy that
//     raises the revision of an unchanged job keeps it ahead of older ones);
//   - otherwise the enrolling replica, if it was a carrier of F, is one no
//     longer (a restart that reuses a name, as a StatefulSet's, and
//     brings another spec), and then:
//   - S.Supersedes is F's fingerprint, or F has no carrier left: S takes
//     force (the enrolling replica found no live carrier of F, or every
//     carrier of F came back with another spec: a rollback, or the last
//     replicas of a losing spec, take over once F's replicas are gone);
//   - both revisions are set (not 0): S takes force if its revision is
//     higher than F's, and never otherwise;
//   - else S takes force if it has never been in force for the job (it is
//     not among the specs kept in Past): a new spec wins, a spec that was
//     replaced does not come back by a restart.
//
// A spec that takes force records the enrolling replica and the store's
// time as its source, puts F first in Past with Until set, and has one
// carrier, the enroller. Past keeps the 32 newest, Carriers the 32 most
// recent. An enrolment whose spec does not take force changes nothing but
// the carriers; its Generation.Spec names the spec in force. A rolling deploy from F to S
// therefore switches at the first replica of S to enroll; replicas of F
// restarting meanwhile do not switch it back; concurrent enrolments of two
// new specs without revisions leave the last one applied in force, and with
// revisions the higher one, in whatever order they come.
//
// # Schedules held as data
//
// A schedule held as data is a catalog entry a program writes with
// WriteSchedules rather than one replicas enroll: its ID is the job name
// its markers, fences, generation, pauses and history are kept under, and
// it records the registered job it runs (CatalogEntry.Run), a version and
// the store-wide sequence number of its last write. Its spec in force is
// the one the last put wrote; enrolments never change it. Each write is one
// atomic step:
//
//   - a put of the ID of a job of the configuration (an entry with a spec
//     in force and no Run) answers ErrNotSchedule;
//   - a put whose Run and fingerprint are those of the live schedule
//     changes nothing, whatever its IfVersion (puts are idempotent: a put
//     retried after its reply was lost succeeds);
//   - a write whose IfVersion is not AnyVersion and not the schedule's
//     version answers ErrVersionMismatch; IfVersion 0 is the version of a
//     schedule that does not exist or is deleted;
//   - any other put puts its spec in force as an enrolment that takes force
//     does (the spec in force before first in Past, with Until; Replica is
//     the writer, WriteSchedulesParams.By; no carriers), sets Run, clears
//     Deleted, raises Version by one (1 for a new schedule) and gives the
//     entry the next sequence number; it begins the job's generation if it
//     has none, as Enroll does, so the schedule's first slots after the put
//     are claimed as new;
//   - a delete of a schedule that does not exist or is deleted answers
//     ErrNoSchedule; of a job of the configuration, ErrNotSchedule; else
//     it puts the spec DeletedFingerprint in force (Body empty, Replica the
//     writer), sets Deleted, raises Version by one and gives the entry the
//     next sequence number.
//
// Sequence numbers grow with every write that changes an entry, across
// the store, in the order the writes took effect: a reader that has seen every
// change up to n (ScheduleChanges with After n) never later finds one at
// or below n. So a claim naming a schedule's spec that a put replaced, or
// that a delete ended, is Superseded from the moment the write returned,
// and a replica following the changes learns of it in the same order.
//
// An enrolment of a live schedule's ID (a configuration's job named like
// it) never takes force and adds no carrier: the replica conflicts, as
// with any spec not in force. An enrolment of a deleted schedule's ID finds
// no spec in force: the enrolled spec takes force and the entry becomes the
// configuration's (Run empty, Deleted false; Version and Seq kept, and the
// entry no longer listed by Schedules).
//
// # The actions log
//
// Every mutation made through the HTTP API, the CLI or the Go API, or by
// slotcron itself (a pause on failure), is appended to the store's actions
// log (AppendAction): who did it, in which role, by which way, what, to
// which job or schedule, why, with what result, and the store's time. The
// log is append-only:
//
//   - an append is one atomic step: it validates the entry (a bad field is
//     ErrInvalid naming the field, and nothing is appended), gives it the
//     next sequence number and the store's time, and stores it; an entry
//     is never changed afterwards;
//   - sequence numbers are store-wide and increase in the order appends
//     take effect, also for appends from several processes at once: no
//     two entries share one, and once a reader has listed an entry, no
//     entry below it appears later (but one a store that lost its data
//     no longer holds, as with markers);
//   - Actions lists newest first, at most Limit entries, those whose Seq
//     is below Before (when set) and whose Who, Kind, Target and At match
//     the filters that are set; a reader that pages with Before = the Seq
//     of the last entry of its page lists every entry once;
//   - Prune deletes the entries whose At + Retain is before the store's
//     clock, and counts them with the markers it deletes.
//
// At is the store's clock when the entry was appended, as a pause note's
// At is, to the backend's precision (milliseconds in SQLite, Redis and
// etcd, microseconds in Postgres). What a log costs in each backend is in
// its documentation.
//
// # Misses are judged by the store's clock
//
// A replica records a slot missed (Skip with a reason) when its own clock
// says the slot's starting deadline has passed. It sets
// SkipRequest.NotBefore to that instant, and the store records nothing
// before its own clock passes it (Status NotYet): a replica whose clock
// runs fast cannot record as missed a slot the others may still run.
//
// Claims work alike: a replica sets ClaimRequest.NotBefore to the slot, and
// the store creates no first marker before its own clock reaches it. So a
// replica whose clock runs ahead does not run a slot early, and no marker
// ever exists before its slot's time: every marker a loss of data can take
// is of a slot older than the generation that begins after the loss, which
// guarantee 3 relies on.
//
// # The decision table
//
// These rules are one decision table, written in Go once, in a package
// internal to slotstore that the backends share: what a claim does given
// the slot's marker, the request, the store's time and the job's generation
// and running slots, and how each request is checked and defaulted first.
// Backends that keep their logic in Go run it: memstore and sqlitestore
// inside their atomic step, etcdstore before a transaction whose compares
// cover everything the decision read. Those that cannot (redisstore's Lua,
// pgstore's SQL) encode the same table, and storetest, with a differential
// test against memstore, checks every backend against it.
//
// # Guarantees every backend makes
//
// They keep the numbers of slotcron's one list of guarantees (the README's
// Guarantees). Numbers 5 (the holder stops before its successor starts),
// 6 (slots are a pure function of schedule, zone and time) and 9 are the
// engine's, not a store's, and are not repeated here.
//
//  1. One live holder: at any instant at most one claim of a slot holds an
//     unexpired lease. Lease expiry is judged by the store's clock.
//  2. Fences only grow: every winning claim of any slot of a job, first claim
//     or takeover, returns a fence greater than every fence issued before for
//     that job, across restarts of the store.
//  3. A finished slot never runs again: Claim never wins a slot whose marker
//     is done, abandoned, skipped or replaced (but a backfill a slot that
//     surely never ran, see Backfill), nor creates the first marker of a
//     slot older than its job's generation (the store may have lost its
//     marker).
//  4. A dead holder's slot is not lost: once the lease of a running slot has
//     expired, the next Claim takes it over (attempt+1, higher fence) or,
//     with OnCrash skip or no attempts left, marks it abandoned.
//  7. Misses are judged by the store's clock: Skip records nothing before
//     the request's NotBefore by the store's clock, and Claim creates no
//     first marker before its NotBefore.
//  8. One spec in force (the store's half): a claim or skip naming a spec
//     that is not its job's spec in force changes nothing and answers
//     Superseded, in the same atomic step as the claim; the spec in force
//     changes only by the rule of The catalog. (The engine's half: a
//     replica names its spec in every claim and skip, and stands aside
//     while another is in force. Number 9, every slot accounted for, is
//     the engine's.)
//
// # Fenced mutations
//
// Renew, Finish and Release present the Ref the claim returned. Each succeeds
// only while the slot is running and its fence is the presented one;
// otherwise it returns ErrLeaseLost and changes nothing. The exceptions, for
// a slot already done or retrying under the presented fence: Finish returns
// nil and changes nothing, so a retried Finish is safe; Renew returns
// ErrFinished, so a holder whose job completed the slot in its own
// transaction (pgstore.CompleteTx) learns that its lease is no longer
// needed rather than lost. A renewal that
// arrives after the lease expired but before any other claim still succeeds:
// no other holder exists, so guarantee 1 holds.
//
// # Failures
//
// A store error that leaves the outcome of a mutation unknown (the request
// was sent and its reply lost, a timeout) wraps ErrOutcomeUnknown, and its
// cause: errors.Is(err, ErrOutcomeUnknown) reports it. The caller must
// treat it as neither success nor failure: an unknown claim may have won,
// and its lease will expire and be taken over; an unknown finish may have
// been recorded or not, and may be retried, since Finish of a slot already
// done under the same fence succeeds.
//
// All methods are safe for concurrent use by many goroutines and, for the
// shared backends, by many processes.
//
// # Constructors
//
// Every backend is made one of two ways, named alike everywhere. Open(ctx,
// Options) makes the store's own connections (a file, a pool, a client)
// and Close closes them: sqlitestore.Open, redisstore.Open, pgstore.Open,
// etcdstore.Open. New(..., client, Options) wraps a client the caller made
// and still owns, which Close leaves open; Options then holds only what is
// not about connecting (a prefix, a schema), and connection settings given
// anyway are ErrInvalid: redisstore.New(client, Options), pgstore.New(ctx,
// pool, Options), etcdstore.New(ctx, client, Options). memstore.New(Options)
// holds no connection and takes no context. Options is the backend's block
// of the YAML configuration, field for key; its Validate names the keys of
// the settings it refuses.
package slotstore
