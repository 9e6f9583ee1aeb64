// Package leader is leader election among replicas, for its users: the
// Elector interface, its Params, the Term a leader is given, the errors
// that end a term, and Register for its metrics. A user gets an Elector
// from a backend (redisleader.New, pgleader.New, etcdleader.New) and calls Lead; nothing
// here is implemented by users.
//
// Backend authors implement package leader/driver instead, and check their
// backend with leadertest.
//
// Leadership is for duties: long-running singleton responsibilities such
// as "one replica owns the websocket fan-out". A replica calls Lead, and
// its fn runs once for every term the replica wins:
//
//	err := elector.Lead(ctx, leader.Params{Name: "fanout", Replica: host, Lease: 5 * time.Second},
//		func(ctx context.Context, t leader.Term) {
//			fanout.Serve(ctx, t.Fence) // until ctx is cancelled
//		})
//
// # Terms
//
//	             Acquire: won                         fn returns (resign)
//	follower ───────────────────▶ leader ─────────────────────────────────▶ release, wake followers,
//	 ▲  │                         │  renew every Lease/3                     cooldown ─▶ follower
//	 │  │ held: Wait(lease left   │
//	 │  │   or a release)         │ trust window ends without renewal,
//	 └──┘                         │ store says lost, or ctx ends
//	  ▲                           ▼
//	  └──────────────── cancel fn's ctx; fn returns; release (fenced)
//
// A follower asks the store how long the current lease has left (Redis
// PTTL, a PostgreSQL row whose expiry the database's clock computed) and
// waits exactly that long, or until the holder releases the lease and the
// store wakes it (Redis pub/sub, PostgreSQL NOTIFY); it never polls on an
// interval of its own. The leader renews every Lease/3 from a goroutine of
// its own.
//
// # What leadership guarantees
//
//  1. At most one leader whose trust window is open. A term begins only
//     when the store's lease of the name is free or expired by the store's
//     clock. The leader trusts its term only until renewal sent + Lease −
//     Margin on its own clocks (monotonic and wall), and the store's lease
//     runs from when that renewal arrived, later; so, as long as the
//     leader's clock does not run slower than the store's by more than
//     Margin/Lease (10% by default), the leader's context is cancelled
//     before its successor's term begins. This holds for a leader that
//     is slow, partitioned from the store, or whose renewals stall.
//  2. Fences only grow. Every term's fence is greater than the fence of
//     every earlier term of the name, including across a restart of the
//     store that loses its data: fences are max(last + 1, the store's clock
//     in microseconds) (on etcd, the revision that created the term plus
//     the fence base of the etcd store's cluster record, written anew with
//     the store's clock when the keys or the cluster were lost; an
//     etcdleader used without the store has no record, and its fences are
//     revisions, which begin again on a new cluster).
//  3. Hand-over is immediate. When fn returns, or Lead's ctx ends and fn
//     returns, the lease is released at once and a waiting replica takes
//     over within a round trip or two.
//  4. A dead leader is replaced when its lease ends: a follower takes over
//     the lease time that was left after the crash plus a round trip.
//
// # What it does not guarantee
//
// A leader that ignores its context may act after its term ended, and so
// may a process that was paused (SIGSTOP, a stalled VM) across the end of
// its trust window: its context is cancelled when it runs again, which may
// be after its successor began. Only a fence stops such a leader: pass
// Term.Fence to every resource the leader writes (package fence). Nobody
// leads while the store is unreachable. Elections are not fair: any
// waiting replica may win.
//
// # Logs and metrics
//
// Every line carries duty and replica. "leadership acquired" (INFO, with
// fence, and the sent time and round trip of the winning Acquire) starts a
// term; "leadership lost" (INFO when resigned or shut down, WARN otherwise,
// with fence and reason) ends it; "lease renewed" (DEBUG, with sent and
// rtt) follows each renewal; "waiting for the lease" (DEBUG, with left)
// each wait of a follower. Store errors are WARN lines. Register adds
// slotcron_leader{duty}, slotcron_leadership_changes_total{duty} and
// slotcron_leader_renewal_seconds{duty} to a Prometheus registry (what
// each means: Register).
//
// # Backends
//
// Every backend's Elector is built by driver.NewElector from the backend's
// driver.Driver (its sessions acquire, renew, release and wait), so the
// campaign, the renewals and the trust window described here are the same
// on every backend; leadertest.Run checks a backend against this contract.
package leader
