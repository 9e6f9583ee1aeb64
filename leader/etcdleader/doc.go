// Package etcdleader is a leader.Elector that keeps its leases in an etcd
// cluster, through go.etcd.io/etcd/client/v3. It is for users: New returns
// the Elector, whose behaviour package leader documents; this package adds
// how etcd keeps the lease.
//
//	e, err := etcdleader.New(client, etcdleader.Options{})
//	err = e.Lead(ctx, leader.Params{Name: "fanout", Replica: host, Lease: 5 * time.Second}, fn)
//
// # Term and fence
//
// A name's term is the key <prefix>leader/<name>, holding when the term's
// lease ends and which campaign holds it, with a holder key,
// <prefix>leader-holder/<name>, attached to the elector's etcd lease (see
// below). A term begins with a Txn that creates both keys, comparing that
// both are absent; its fence is that Txn's revision, the keys'
// CreateRevision. etcd's revision counts every change in the cluster and
// never goes back, across elections of etcd's leader and restarts of its
// members, so every term's fence is above every earlier one's. A term key
// whose lease ended (Options.ClockSkew ago, see below), or that is the
// campaign's own (an Acquire whose reply was lost), is first deleted by a
// Txn comparing its ModRevision with the one read: every term creates the
// key afresh, so no two terms share a fence. The leader renews every Lease/3 with a Txn that writes a later
// lease end only while both keys' CreateRevision is the fence, and only if
// the end moves forward, so a renewal that reaches etcd after a later one
// cannot shorten the lease; it releases by deleting both keys under the
// fence.
//
// # The clock leases are judged by
//
// etcd has no clock a client can read through its API: its leases count
// whole seconds on etcd's leader, and no request returns the time. So a
// term's lease end is Options.Clock when the leader sent the Acquire or
// renewal, plus the lease, and a follower judges it by its own
// Options.Clock, taking over only once the end is Options.ClockSkew in the
// past. The scheduler passes the etcd store's clock, the members' time
// read from their HTTP Date header (package slotstore/etcdstore, The
// clock), so every replica judges by one clock whatever its host's says.
// With the default, time.Now, replicas need synchronised clocks (NTP):
// skew between two replicas shortens or lengthens a lease by the skew, and
// package leader's first guarantee (the leader's context ends before its
// successor's term begins) holds while the skew stays below Params.Margin
// (a tenth of the lease by default) plus Options.ClockSkew. Either way,
// fences are what make a late leader harmless: pass Term.Fence to what
// the leader writes.
//
// # The session's etcd lease
//
// Each elector holds one etcd lease for all its campaigns, granted with
// Options.SessionTTL and kept alive by the client's KeepAlive while any
// campaign runs; it is never revoked, only left to expire. Every holder
// key hangs on it, so when the process dies, or is cut off from etcd's
// quorum for the TTL, etcd deletes its holder keys by etcd's clock. A term
// whose holder key is gone ends at its next renewal with ErrLeaseLost, and
// so does every term of a process whose client gave up on the lease (its
// keepalive channel closed); the campaign goes on under a new etcd lease.
// A follower never takes over on a holder key's deletion alone: the
// leader may be alive and trusting its term until the term's lease ends.
//
// # Followers
//
// Each campaign watches its name's term key from before its first
// Acquire, for deletions only (etcd filters out the renewals). A follower
// told that the lease has some time left waits exactly that long, or until
// a deletion after the revision it read: a release, or another follower
// ending an expired term. It never polls.
//
// # Quorum and lost replies
//
// Reads are linearizable (the client's default) and every write is a Txn
// comparing what its decision read. A call that has no answer after a
// quarter of the lease also sends its Txn again, which the client's
// balancer gives to the next member, and takes the first answer; a call
// whose request failed without being served (a dropped connection, a
// member without a leader, etcd's "request timed out": the gRPC code
// Unavailable) sends it again after a pause; every call ends with its
// context. Every Txn is safe to send twice, so a reply that was lost,
// whose outcome is unknown, costs nothing: when an Acquire fails that
// way, the next Acquire of the campaign finds its own term, ends it and
// begins another with a new fence.
//
// # Failures
//
//   - A minority of members lost (killed, cut off, frozen): requests go to
//     the others. A request a frozen member holds is sent to another after
//     a quarter of the lease, at most a second; a watch on it holds up one
//     follower until its wait ends (each session watches on a gRPC stream
//     of its own); the lease's keepalive stream moves to another member
//     once gRPC's keepalive drops the connection (10 s and more), which
//     DefaultSessionTTL (20 s) outlasts. TestFrozenMember freezes a member
//     for a second only; the chaos session's 10 s freezes run the store,
//     not a duty.
//   - etcd's leader killed: writes wait for the election of the next (the
//     election timeout, a second by default), and a request in flight to
//     the dead leader is sent again after at most a second
//     (TestReleaseAsEtcdsLeaderDiesIsSentAgainSoon), which may end the term
//     under way (ErrNotRenewed) if it outlasts the trust window; terms go on
//     after it with fences still growing, and the killed member rejoins
//     when it restarts (TestFencesAcrossLeaderKill).
//   - Quorum lost: nobody leads; every term ends with its trust window, and
//     campaigns win again once the quorum is back.
//
// # Failover bound
//
// After a leader's process dies, a follower takes over when the term's
// lease ends by the follower's clock, plus Options.ClockSkew: the lease
// left at the crash, the skew allowed, and a few round trips (reading the
// expired term, deleting it, creating the next; each a write etcd commits
// on a majority). TestFailoverTiming kills a leader 20 times and logs the
// figures; on loopback, etcd without fsync and the default 50 ms skew,
// about 55 to 90 ms beyond the lease left. After a release, a follower
// takes over a round trip after the deletion reaches its watch.
//
// # Limits
//
// A wall-clock step on a replica's host moves the lease ends it writes
// and judges, as skew does. Restoring etcd from a snapshot takes
// revisions back, and with them fences, unless the restore bumps them
// (etcdutl snapshot restore --bump-revision, with --mark-compacted). Each
// renewal is a write, so the cluster keeps a revision per renewal until
// it compacts: run etcd with --auto-compaction-retention. A transaction
// holds at most three comparisons and two operations a branch, far below
// etcd's --max-txn-ops.
package etcdleader
