// Package redisstore is a slotstore.Store kept in Redis: a standalone
// server, a master watched by Sentinels, or a Redis Cluster, through
// github.com/redis/go-redis/v9. It needs Redis 6.2 or newer and is tested
// with 7.0.
//
//	s, err := redisstore.Open(ctx, redisstore.Options{Addrs: []string{"redis:6379"}})
//
// One address means a standalone server; several mean the seeds of a
// Cluster; Options.MasterName makes the addresses Sentinels. Open makes the
// store's client and closes it in Close; New takes a go-redis client the
// caller configured and still owns (slotstore's package documentation,
// under Constructors).
//
// # One round trip an operation
//
// Claim, Skip, Renew, Finish, Release and Enroll are Lua scripts
// (scripts/*.lua), run by EVALSHA, so each is atomic and takes one round
// trip. Each script reads the marker before it writes: claim.lua, which
// serves Claim and Skip, is slotstore's decision table in Lua, and reads
// the job's generation in the same call;
// renew.lua, finish.lua and release.lua change a marker only while it is
// running under the presented fence, and otherwise return
// slotstore.ErrLeaseLost having changed nothing (finish.lua accepts a slot
// already done or retrying under that fence, and changes nothing; renew.lua
// answers it slotstore.ErrFinished). A batch of claims is decided
// by one script call per 1,000 slots, pipelined, so a batch is one round
// trip however large, and no call keeps Redis from its other clients for
// long (a call of 1,000 new slots runs for about 25 ms on a 2-core machine).
// The claim script decides every request before it writes anything, so a
// call that fails while deciding changes nothing. In a Cluster, calls are
// grouped by hash slot and the pipeline goes to every master concerned at
// once; a job's requests share a hash slot, so they are decided in order by
// one call per 1,000.
//
// An overlap policy needs the job's running slots: claim.lua reads the
// job's running index (below) only for a claim with forbid, replace or
// queue that would create a slot's first marker, or a backfill with forbid
// of a skipped slot (which it wins, when it may, by rewriting the whole
// marker as a first claim would set it: slotstore's package documentation,
// under Backfill), checks each entry's marker, and adds the slots the
// batch won before, so a forbid or queue claim sees them and a replace
// claim supersedes them. A queue claim that must wait writes nothing and
// answers alone the least remaining lease of the job's running slots that
// hold it back, 0 for an expired one a takeover may still win. Every script that changes a marker's state keeps
// the running index, and on a single server the live index, up to date in
// the same call. SetPause is one script, which changes the set of pauses
// and the hash of their notes together; Pauses reads both in one script
// call (every replica reads them every second: one command, where a
// MULTI/EXEC was four). Beat and Replicas are one script each.
//
// # The common claim
//
// Most claims are of a slot nobody holds yet, as every replica claims it
// when it comes due. The call carries, a request, only the job's number, the
// slot, a profile (lease, policies, retention: the handful a batch shares),
// NotBefore ("=" when it is the slot) and NotAfter (microseconds after the
// slot, its trailing zeros as a power of ten: "6e7" for a deadline of a
// minute; empty for none); the script reads the marker with one HGETALL
// and, when it wins the first marker, writes only the fields a first claim sets (a
// missing field reads as empty, in this version and the previous one) and
// answers with the fence alone: the store builds the rest of the marker
// from the request and Redis's time, which the reply carries once. Every
// other case (takeover, retry, release, backfill, overlap forbid or
// replace, data loss, a late claim, a skip, a losing claim) answers the
// whole marker, as before.
//
// # Keys
//
// Every key starts with Options.Prefix (default "slotcron:") and carries the
// job's name as its hash tag, {job}, so a job's markers, fence counter,
// generation and indexes share one Cluster slot (keys.go lists them). A
// marker is a hash, <prefix>{job}:m:<slot>; it keeps the incarnation of its
// last claim (slotstore.Marker.Incarnation). Three sorted sets index a
// job's markers: all of them by slot, for History; the running ones by
// slot, for History of running markers and the overlap policies; all of
// them by the instant they expire, for Prune. The fence counter and the
// generation, <prefix>{job}:gen, are plain strings with no expiry. The set
// <prefix>jobs names the jobs for History and Prune of every job; it has no
// hash tag, so in a Cluster it lives apart from the jobs, claim and skip
// batches add to it with a SADD sent in the same pipeline, and Prune never
// removes names from it there (on a single server the prune script drops a
// job whose index is empty). The set <prefix>pauses holds the paused jobs,
// and the empty string while the whole cluster is paused; it has no hash
// tag either and never expires. The hash of their notes,
// <prefix>pausenotes{<prefix>pauses}, takes the whole pauses key as its
// hash tag, so the two share a Cluster slot; a pause recorded before notes
// were kept has none. During a rolling upgrade a replica of the previous
// build pauses and resumes with a bare SADD or SREM and leaves the notes
// hash untouched, so a pause it makes may show the note of an earlier
// pause of the same job (one a newer replica recorded, which the old
// replica's resume did not delete). The hash <prefix>beats holds each replica's last
// beat, with when Redis saw it and when it may be deleted; Beat and
// Replicas delete those past their TTL and slotstore.BeatKeep, and the hash
// expires with the last beat it keeps, so Prune need not touch it.
//
// # The catalog
//
// A job's catalog entry is three keys under its hash tag (keys.go): the
// hash <prefix>{job}:spec of the spec in force (fingerprint, body as
// given, revision as decimal text, replica, since), the hash
// <prefix>{job}:carriers of its carriers and their last enrolment, and the
// list <prefix>{job}:past of the specs in force before, newest first, each
// the netstrings of its fingerprint, revision, replica, since, until and
// body. enroll.lua applies the rule of The catalog (slotstore's package
// documentation) to each job in the call that enrolls it; revisions are
// compared as decimal text, so an int64 keeps every digit in Lua. Every
// enrolment, with specs or without, answers the spec in force from the same
// call. The sorted set <prefix>catalog names the jobs with an entry, all
// with score 0 so that they sort by name for Catalog's pages; it has no
// hash tag, so in a Cluster a ZADD in the enrolment's pipeline adds to it,
// and on a single server enroll.lua does. Catalog reads the index, then
// each entry with catalog.lua, an entry in one step.
//
// claim.lua checks a request that names a spec against the job's spec in
// force with one HGET a job and call, before anything else of the request:
// a refused request reads and writes nothing more, so it neither begins a
// generation nor takes a fence, and answers Superseded. A request naming
// no spec reads nothing more than before, so the scripts of the previous
// version, which know nothing of specs, keep claiming alongside on the same
// keys. The catalog's keys never expire and Prune leaves them; a loss of
// data that takes them leaves the job with no spec in force, which its next
// enrolment with a spec puts back.
//
// # Schedules held as data
//
// A schedule held as data is a catalog entry: its keys are the job's own
// (its ID is the job name), and its spec hash also holds run (the job it
// runs), ver (its version), seq (the sequence number of its last write)
// and del ('1' once deleted); Catalog answers them for every entry.
// schedwrite.lua applies the rule of Schedules held as data (slotstore's
// package documentation) to each write of a batch, in order, each in its
// own step: the rule of rules.ApplyWrite, with the job's generation begun
// as Enroll begins it. enroll.lua encodes the enrolment's side: an
// enrolment of a live schedule's ID changes nothing, carriers included; of
// a deleted schedule's ID it clears run and del (version and sequence
// number kept) and puts the enrolled spec in force. claim.lua needs no
// change: a deleted schedule's spec in force is slotstore.DeletedFingerprint,
// which no claim names.
//
// Indexes (keys.go) share the hash tag {<prefix>sched}: the sorted set of
// live schedule IDs and one per run job, by name (score 0), for Schedules'
// pages; every schedule's ID scored by the sequence number of its last
// write, for ScheduleChanges; the sequence counter; and each ID's version
// and run job as the indexes last recorded them.
//
// What each call costs:
//
//   - WriteSchedules, on a single server or a Sentinel's master: one call
//     of schedwrite.lua a batch (at most slotstore.MaxScheduleWrites
//     writes), one round trip, which also changes the indexes, takes each
//     changed entry's sequence number from the counter (INCR) and
//     publishes one notice. Redis runs one script at a time, so sequence
//     numbers grow in the order writes take effect, and a reader never
//     sees a write at or below a number it has read past. About 40 ms a
//     batch of 1,000 on a 2-core machine: 1,000,000 schedules in about 45 s.
//   - Schedules by run job, prefix or neither: one ZRANGEBYLEX of a page of
//     IDs from the run job's index or the live one (O(log N + page)), then
//     one pipeline of catalog.lua calls that read the page's entries: two
//     round trips whatever the number of schedules. An entry that no
//     longer matches (written between the two reads) is left out and the
//     page read on. With IDs, the one pipeline.
//   - ScheduleChanges: one MULTI/EXEC of a ZRANGEBYSCORE above After
//     (O(log N + page)) and a GET of the counter, one round trip, nothing
//     more when nothing changed; a page of changes costs one pipeline of
//     catalog.lua calls more.
//   - WatchSchedules: one pub/sub subscription (see its documentation).
//
// In a Cluster the indexes cannot share the hash slot of every job, and a
// write is three pipelined rounds: schedwrite.lua, a call a hash slot,
// writes the entries; schedindex.lua, on the indexes' hash slot, records
// every write that left a schedule, changed or not, unless the indexes
// hold its version already: it takes the next sequence number, moves the
// ID between the live and run sets and publishes, with a ZADD to the
// catalog's index beside it; schedstamp.lua then writes each number into
// its entry. Sequence numbers are taken by the index script, one call at
// a time, so the feed stays in order: a reader never misses a write that
// the indexes recorded. What a Cluster does not guarantee:
//
//   - A write takes effect (its spec in force, which claims check) in the
//     first round, before the indexes record it: for that moment Schedules
//     and ScheduleChanges do not show it yet. A writer that fails between
//     the rounds (a lost connection, a crash) gets an error wrapping
//     slotstore.ErrOutcomeUnknown and leaves a write the indexes never
//     recorded: the feed skips it until the same batch is retried (a
//     retried put changes no entry, but the indexes then record it) or
//     the schedule is written again. A reader must therefore not trust the
//     feed alone in a Cluster: it reads every schedule again from time to
//     time (Schedules, as the engine does), which finds such writes.
//   - An entry's own seq (Catalog, and WriteSchedules' answer to a refused
//     write) lags the indexes' until the third round; ScheduleChanges
//     answers the indexes' number. Two writers racing on one schedule
//     between the rounds may have the later number go to the older write:
//     the feed then shows the entry as it is now, which is the newer.
//   - A master that loses its data takes its entries or the indexes with
//     it, not both: IDs whose entries are gone are left out of Schedules
//     and ScheduleChanges; schedules the lost indexes named are listed
//     again once written again.
//
// A Redis restarted empty (or flushed) loses the schedules and the
// counter: ScheduleChanges' Head falls below a reader's cursor, which is
// how the reader tells (slotstore.Changes). A failover, or a restart from
// a snapshot, that loses only the last writes can give the next writes
// numbers a reader has already read past: it notices only if it asks
// before Head is back above its cursor; the periodic full read covers the
// rest. During a rolling upgrade, replicas of the previous build enroll by
// the previous enroll.lua, which knows nothing of schedules held as data
// and would put its spec in force over a live schedule of the same name:
// write schedules once every replica runs this version.
//
// # The actions log
//
// The log is three keys on one hash slot (actions.go): a counter, a sorted
// set holding each entry as its member, scored by its Seq, and a sorted set
// of each Seq scored by the entry's expiry (At + Retain). AppendAction is
// one script call, one round trip: INCR, then the entry and its expiry,
// at TIME; Redis runs one script at a time, so Seqs are given in the order
// appends take effect, in a Cluster too, and At follows Seq. Actions reads
// the log with ZREVRANGEBYSCORE back from Before, Limit members at a time
// without filters, 500 with, decodes and filters them in the client, and
// reads on until it has Limit entries or the log ends: a page costs
// O(log n + Limit) when the filters pass most entries, and up to every
// entry below Before when they pass few. Entries are kept in memory, as
// markers are: each its text and an entry in each sorted set. Prune deletes
// the entries whose expiry is before TIME, 500 a script call. The counter
// is lost with the log when Redis loses its data (a restart without
// persistence): Seqs then begin again at 1.
//
// # Time
//
// Every time is Redis's: scripts read TIME, never the client's clock.
// A claim stores the lease end (TIME + lease) in the marker and compares it
// with TIME, so the lease expires by Redis's clock; Remaining of a Held
// result is that lease end minus TIME. A retrying marker keeps the time its
// retry is due in the same field, and is judged alike, and so is a skip's
// NotBefore (to the microsecond): before it, the skip records nothing and
// answers NotYet. So are a claim's NotBefore and NotAfter, to the
// microsecond: a claim that would create a slot's first marker once TIME
// is past its NotAfter records the slot skipped with slotstore.ReasonLate
// instead (no fence), before any overlap policy is looked at. Each replica
// runs the claim script of its own build, by its SHA: during a rolling
// upgrade a replica of the previous build sends no NotAfter and its
// script knows no such rule, so its own late first claims still win as
// before. A generation begins at TIME. Each marker expires
// by PEXPIREAT at the later of its retention end (Slot + Retain) and, while
// running or retrying, its lease end or retry time, so Redis deletes it
// once Prune may (retention over, and neither running under a live lease
// nor retrying before the retry is due), with or without Prune. So a
// backfill made once Slot + Retain has passed by TIME claims as a
// takeover-only claim: the slot's marker may have expired after it ran.
// Prune then removes the expired markers' index entries and counts them; the
// entries History meets for markers already gone are removed too, and
// counted by the next Prune.
//
// # Fences
//
// A job's fence counter is a key of its own, with no expiry. A winning claim
// takes
//
//	fence = max(last fence + 1, TIME in microseconds)
//
// and the script stores it before any marker that carries it. On one server
// fences therefore grow in claim order. When Redis restarts without its data
// the counter is gone, and the first fence after the restart is Redis's
// clock in microseconds: it exceeds the last fence F issued before, because
// F is at most the clock at the last claim plus the counter's lead over the
// clock, and the lead only grows while a job wins more than one claim a
// microsecond. A batch of 1,000 slots of one job, the most one script call
// decides, puts the counter at most 1,000 µs (1 ms) ahead, and the clock
// catches up by a microsecond every microsecond. The bound: fences never go
// back across a loss of data as long as the time between the last claim
// before it and the first claim after it, by Redis's clock, exceeds the lead
// (1 ms at most, for any realistic claim rate), that is, unless the
// server's clock steps back by about as much as the outage lasted. The same
// holds for a Sentinel failover to a replica that missed the last writes,
// with the new master's clock in place of the restarted one's.
//
// The scheme needs no configuration and one key a job, and keeps fences
// readable: they are microseconds since 1970 (about 1.8e15 in 2026), exact
// in an int64 and in a Lua number until the year 2255. An epoch kept in the
// high bits would need a counter of epochs that could itself be lost; a
// persisted counter would need persistence, which this store must not
// assume.
//
// # Generations
//
// A job's generation (slotstore.Generation) is the key <prefix>{job}:gen,
// when it began in milliseconds of Redis's clock. Enroll creates it when it
// is missing, and so does claim.lua, in the call that decides the claims:
// no claim can come between a loss of data and the check. Nothing deletes
// the key (Prune leaves it) and it never expires, so it is missing only
// when Redis lost the job's data, or before the job was first enrolled. A
// claim that would create the first marker of a slot the generation does
// not cover (slotstore.Generation.Covers: a slot older than the
// generation's beginning plus slotstore.ClaimLead, which the claim call
// passes to the script in milliseconds), not takeover-only and not a term,
// records the slot skipped with slotstore.ReasonDataLoss instead, with no
// fence; a backfill does not win a skipped slot the generation does not
// cover; skips are recorded as asked. A slot less than ClaimLead after the
// generation began is not covered because a replica claims ahead, from
// ClaimLead before the slot: it may have been claimed, and its marker
// lost, before the generation began. The key carries the job's hash tag:
// in a Cluster, a master that loses its data begins new generations for
// its own jobs only, and the jobs of the other masters keep theirs and
// their markers.
//
// The key is written once, when the job is first enrolled or claimed, and
// its absence is the store's only sign of a loss. So:
//
//   - A loss that takes the key with it loses at worst a slot skipped,
//     never a slot run twice: Redis restarted with no persistence or with
//     its files gone (and the replicas that resynchronised from it), FLUSHALL
//     or FLUSHDB, a failover to a node that never had the job's keys, a
//     Cluster master replaced by an empty node. Every slot before the new
//     generation, or less than ClaimLead after it began, that has no
//     marker is skipped; slots from then on are claimed as usual. (A claim
//     made without NotBefore more than ClaimLead before its slot, whose
//     marker the loss took, escapes this: its slot can run again.)
//   - A loss of only the last writes keeps the key, which is older: a
//     failover (Sentinel or Cluster) to a replica that had not received
//     them, a restart from an RDB snapshot or from an AOF fsynced once a
//     second, a restore from a backup. A slot whose marker was among the
//     lost writes is covered by the generation (unless less than ClaimLead
//     after it began), so the next claim of it wins as new: a finished
//     slot that a replica then claims (the catch-up of a replica starting,
//     or one still within the starting deadline) runs again, and a running slot may get a second holder while the
//     first still runs. Fences still grow across the loss (see Fences), so
//     an effect written with the fence package's once-per-slot helper
//     refuses the second run; WaitReplicas (below) narrows the window of a
//     failover; nothing here closes it. After restoring a backup, deleting
//     every <prefix>{...}:gen key makes each job begin a new generation at
//     its next claim, so the slots after the backup are skipped, not run;
//     markers the backup holds as running, released or retrying were
//     claimed before the new generation, so once their lease has ended they
//     are abandoned (ReasonDataLoss), never taken over: the slot may have
//     finished after the backup was made.
//
// A job's generation also begins with the first version of slotcron that
// enrolls it: slots from before that have no marker (a catch-up across the
// upgrade) are skipped for data loss.
//
// Redis must not evict keys: set maxmemory-policy noeviction. An evicted
// marker is a loss the generation cannot see, like the lost last writes
// above.
//
// # Waiting for replicas
//
// Options.WaitReplicas = N makes Claim, Renew and Finish send WAIT N after
// their script calls, in the same pipeline on the same connection, so the
// call succeeds only once N replicas have acknowledged everything the
// master had written until then, the call's own writes included; a healthy
// replica does within a round trip. When fewer acknowledge within
// Options.WaitTimeout the call fails with an error wrapping
// ErrNotReplicated and slotstore.ErrOutcomeUnknown: the master applied it.
// A caller treats such a claim as neither won nor lost; one that adopts it
// later by renewing it, as the engine does, gets the same wait from Renew,
// so no run starts on a claim that N replicas have not acknowledged. A
// Finish retried after such an error waits again, even when it finds the
// slot already done (finish.lua then writes the marker's state again, so
// that the wait covers it). Skip, Release, Enroll, WriteSchedules and
// SetPause do not wait: a lost skip leaves a slot that nobody ran
// unrecorded, a lost release makes the slot wait for its lease to end, a
// lost generation begins a later one, a lost schedule write shows in
// Schedules (and, the counter lost with it, in ScheduleChanges' Head:
// Schedules held as data), and a lost pause shows in Pauses.
//
// In a Cluster WAIT has no key, and go-redis would send it to any master,
// on another connection than the scripts. The store instead sends the
// script calls of each master, and their WAIT, in a pipeline on a
// connection to that master (the client go-redis keeps for the master of
// their hash slot), to all masters at once. Such calls skip the Cluster
// client's redirections: one that meets MOVED or ASK, during a resharding,
// fails as not run, and the client reloads the slot layout for the next.
//
// What it guarantees: a claim, renewal or finish that succeeds is in the
// memory of N replicas of the master that ran it. What it does not:
//
//   - It does not make replication synchronous. Redis still acknowledges
//     the script before the replicas have it; only the caller waits, and a
//     call that failed as unknown may be on the master alone.
//   - It does not make a failover promote one of those replicas. Sentinel
//     and Cluster prefer the replica with the most of the master's stream,
//     which with N equal to the number of replicas normally holds every
//     acknowledged write; but a failover to a replica that had not
//     acknowledged it (fewer than all replicas asked for, replica-priority,
//     the acknowledging replicas down too) still loses it, with the
//     consequences Generations lists for a loss of the last writes.
//   - It does not make the write durable: the replicas hold it in memory,
//     and one that restarts without persistence loses it like the master.
//
// While fewer than N replicas acknowledge (down, cut off, paused, or fewer
// exist), nothing runs: claims fail as unknown, adoptions fail, renewals
// fail so running slots stop when their holders stop trusting their
// leases, and a slot whose attempts are spent is abandoned. A replica just
// attached may take a second to acknowledge its first write. Zero, the
// default, waits for none.
//
// # Failures
//
// go-redis never retries a script of this package (every call is marked
// NoRetry): a claim sent twice would answer Held to the claim that won. A
// call that fails after its request may have reached Redis (a read timeout,
// a connection lost while waiting, a context ended in flight) returns an
// error wrapping slotstore.ErrOutcomeUnknown, which the caller treats as
// Failures in slotstore's package documentation says. A call that provably
// did not run (no connection could be made, or Redis refused it: LOADING,
// READONLY, OOM, MOVED, NOSCRIPT...) returns its plain error. A batch some
// of whose calls ran but not all is an unknown outcome as a whole, and so
// is a call that fewer replicas acknowledged than Options.WaitReplicas asks
// for (ErrNotReplicated). A server that lost its script cache answers
// NOSCRIPT and the script is sent again by its text, which costs one more
// round trip once per script.
// After Close every method returns an error wrapping slotstore.ErrClosed.
//
// # Limits
//
// Redis replicates asynchronously. A failover (Sentinel or Cluster), a
// restart from a snapshot or a restore can lose the last writes the old
// master acknowledged, and keep the job's generation: a lost claim, and the
// slot can be claimed and run again; a lost finish, and the slot can be
// taken over, or claimed as new if its marker is gone (see Generations).
// WaitReplicas narrows this for failovers. Fences still grow across it (see
// Fences), so an effect fenced by the job's fence rejects the older holder;
// exactly-once effect needs that fencing here, and a once-per-slot write
// for a repeat.
//
// A marker whose retention ends while it is running disappears when its
// lease ends: a holder that dies after its slot's retention has ended is not
// taken over. Keep the retention (the history setting) longer than the
// longest run.
package redisstore
