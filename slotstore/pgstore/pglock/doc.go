// Package pglock offers PostgreSQL advisory locks that cannot leak.
//
// A session-level advisory lock (pg_advisory_lock) belongs to the database
// session, not to the code that took it. Taken on a connection borrowed
// from a pool, it stays held after the connection goes back to the pool,
// until some later borrower happens to unlock it or the pool closes that
// connection: a crashed or forgetful holder keeps everybody else out, and
// an unrelated borrower of the same connection silently holds it too. This
// package offers the two shapes that avoid the hazard.
//
// # RunExclusive: transaction-scoped
//
// RunExclusive begins a transaction on a pooled connection, tries
// pg_try_advisory_xact_lock(key) and, if it got the lock, runs fn inside the
// transaction. The lock ends with the transaction, whatever happens: commit,
// rollback, an error, a panic in fn (the deferred rollback runs) or a broken
// connection (the server ends the transaction). It never waits for the
// lock: when another session holds it, fn does not run and ran is false.
// Use it for short, periodic work that one replica at a time should do,
// such as pruning.
//
// # SessionLock: a dedicated connection
//
// LockSession and TryLockSession open a connection of their own
// (pgx.ConnectConfig, never a pooled one) and take the session-level lock on
// it. The lock lives exactly as long as that connection: Unlock releases it
// and closes the connection; if the connection dies, the server drops the
// lock. A goroutine pings the connection every PingEvery; when a ping fails
// it closes the connection and Lost's channel, so the holder learns that
// it may no longer hold the lock.
//
// Lost is a signal, not a lease. Between the moment the server drops the
// lock (its end of the connection died, or an administrator terminated the
// backend) and the moment Lost closes, up to PingEvery plus PingTimeout may
// pass, during which another session may already hold the lock. Work done
// under a session lock must therefore still be fenced, or stop well within
// that window; slotcron's slot leases and fences exist for exactly this
// reason.
//
// # Keys
//
// Advisory locks share one 64-bit key space per database with every other
// user of the database, including slotcron's own stores, which derive
// their keys from a hash of the schema name. Choose keys that cannot
// collide, for example from a hash of a name your application owns.
package pglock
