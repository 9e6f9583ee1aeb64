// Package redisstore is a slotstore.Store kept in Redis: a standalone
// server, a master watched by Sentinels, or a Redis Cluster, through
// github.com/redis/go-redis/v9. It needs Redis 6.2 or newer and is tested
// with 7.0.
//
//	s, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{"redis:6379"}})
//
// One address means a standalone server; several mean the seeds of a
// Cluster; Options.MasterName makes the addresses Sentinels. NewWithClient
// takes a go-redis client configured by the caller instead.
//
// # One round trip an operation
//
// Claim, Skip, Renew, Finish and Release are Lua scripts (scripts/*.lua), run
// by EVALSHA, so each is atomic and takes one round trip. Each script reads
// the marker before it writes: claim.lua, which serves Claim and Skip, is
// slotstore.Decide, Apply, Supersede and ApplySkip in Lua; renew.lua,
// finish.lua and release.lua change a marker only while it is running under
// the presented fence, and otherwise return slotstore.ErrLeaseLost having
// changed nothing (finish.lua also accepts a slot already done or retrying
// under that fence, and changes nothing). A batch of claims is decided
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
// job's running index (below) only for a claim with forbid or replace that
// would create a slot's first marker, checks each entry's marker, and adds
// the slots the batch won before, so a forbid claim sees them and a replace
// claim supersedes them. Every script that changes a marker's state keeps
// the running index up to date in the same call. SetPause and Pauses are a
// single SADD, SREM or SMEMBERS.
//
// # Keys
//
// Every key starts with Options.Prefix (default "slotcron:") and carries the
// job's name as its hash tag, {job}, so a job's markers, fence counter and
// indexes share one Cluster slot (keys.go lists them). A marker is a hash,
// <prefix>{job}:m:<slot>. Three sorted sets index a job's markers: all of
// them by slot, for History; the running ones by slot, for History of
// running markers and the overlap policies; all of them by the instant they
// expire, for Prune. The fence counter is a plain string. The set
// <prefix>jobs names the jobs for History and Prune of every job; it has no
// hash tag, so in a Cluster it lives apart from the jobs, claim and skip
// batches add to it with a SADD sent in the same pipeline, and Prune never
// removes names from it there (on a single server the prune script drops a
// job whose index is empty). The set <prefix>pauses holds the paused jobs,
// and the empty string while the whole cluster is paused; it has no hash
// tag either and never expires.
//
// # Time
//
// Every time is Redis's: scripts read TIME, never the client's clock.
// A claim stores the lease end (TIME + lease) in the marker and compares it
// with TIME, so the lease expires by Redis's clock; Remaining of a Held
// result is that lease end minus TIME. A retrying marker keeps the time its
// retry is due in the same field, and is judged alike. Each marker expires
// by PEXPIREAT at the later of its retention end (Slot + Retain) and, while
// running or retrying, its lease end or retry time, so Redis deletes it
// once slotstore.Marker.Prunable allows, with or without Prune.
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
// # Failures
//
// go-redis never retries a script of this package (every call is marked
// NoRetry): a claim sent twice would answer Held to the claim that won. A
// call that fails after its request may have reached Redis (a read timeout,
// a connection lost while waiting, a context ended in flight) returns an
// error for which slotstore.IsOutcomeUnknown reports true: an unknown claim
// may have won, and its lease will expire and be taken over; an unknown
// finish may have been recorded or not, and may be retried, since Finish of
// a slot already done under the same fence succeeds. A call that provably
// did not run (no connection could be made, or Redis refused it: LOADING,
// READONLY, OOM, MOVED, NOSCRIPT...) returns its plain error. A batch some
// of whose calls ran but not all is an unknown outcome as a whole. A server
// that lost its script cache answers NOSCRIPT and the script is sent again
// by its text, which costs one more round trip once per script.
// After Close every method returns an error wrapping slotstore.ErrClosed.
//
// # Limits
//
// Redis replicates asynchronously. A failover (Sentinel or Cluster) can lose
// the last writes the old master acknowledged: a claim, and the slot can be
// claimed and run again, or a finish, and the slot can be taken over. Fences
// still grow across it (see above), so an effect fenced by the job's fence
// rejects the older holder; exactly-once effect needs that fencing here.
//
// A marker whose retention ends while it is running disappears when its
// lease ends: a holder that dies after its slot's retention has ended is not
// taken over. Keep the retention (the history setting) longer than the
// longest run.
package redisstore
