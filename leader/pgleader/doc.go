// Package pgleader is a leader.Elector that keeps its leases in
// PostgreSQL, on pgx v5. It is for users: New returns the Elector, whose
// behaviour package leader documents; this package adds how PostgreSQL
// keeps the lease.
//
//	e, err := pgleader.New(ctx, pgleader.Options{DSN: os.Getenv("DATABASE_URL")})
//	err = e.Lead(ctx, leader.Params{Name: "fanout", Replica: host, Lease: 5 * time.Second}, fn)
//
// # Lock, lease and fence
//
// Every campaign holds a connection of its own, opened with pgx.Connect
// and never pooled. A session-level advisory lock belongs to the database
// session, not to the code that took it: taken on a pooled connection it
// would stay held after the connection went back to the pool, and the
// pool's next borrower would hold it without asking. On a connection of
// its own the lock belongs to the campaign alone and ends with it
// (TestLockFollowsTheTerm).
//
// A term needs two things: the name's advisory lock (pg_try_advisory_lock
// of a 64-bit hash of schema and name, in the key space every user of the
// database shares) on the campaign's session, and the name's row in the
// table leaders, taken only when the last term's lease has ended by the
// database's clock (clock_timestamp()). Taking the row issues the term's
// fence, max(last fence + 1, the database's clock in microseconds), and
// records the lease's end, the holder and the session's backend pid.
//
// The lock keeps a second session out for as long as the leader's
// connection lives; the row keeps a successor out until the leader's
// trust window has surely ended, even when the leader's session is gone
// but its process may still act. The leader renews every Lease/3 by an
// UPDATE of its row under its fence, which is also the check of its
// connection: when the connection breaks, or an administrator terminates
// its session, the lock is gone with it and the next renewal ends the term
// (leader.ErrLeaseLost; TestTerminatedSessionEndsTerm).
//
// # Followers
//
// A follower LISTENs on the channel slotcron_leader, tries the lock, and
// when it is held reads how long the row's lease has left and waits that
// long, or until the leader's release (an UPDATE that ends the lease, the
// unlock and a NOTIFY, committed together) wakes it. When the lease has
// ended but the recorded leader's session still holds the lock (a leader
// paused or partitioned while the server still believes its connection
// alive), the follower ends that session with pg_terminate_backend, which
// needs the same role or pg_signal_backend.
//
// # Failover bound
//
// After a leader's process dies, its server-side session ends as soon as
// the server sees the connection close, and a follower takes over when
// the row's lease ends: the lease time that was left plus a round trip or
// two (TestFailoverTiming kills a leader 20 times and logs the figures; on
// loopback, 2 to 3 ms beyond the lease left). After a network partition
// the server may keep the dead session for as long as TCP keepalives take
// to notice; the follower does not wait for that, it terminates the
// session once the lease has ended. After a release, a follower takes over
// within a few round trips. A follower's session that stalls between
// taking the lock and taking the row (a few microseconds) holds the others
// up until it resumes or its connection dies; nothing terminates it, since
// its pid is not the recorded leader's.
package pgleader
