// Package redisleader is a leader.Elector that keeps its leases in Redis:
// a standalone server, a master watched by Sentinels, or a Redis Cluster,
// through github.com/redis/go-redis/v9. It is for users: New returns the
// Elector, whose behaviour package leader documents; this package adds
// how Redis keeps the lease.
//
//	e := redisleader.New(client, redisleader.Options{})
//	err := e.Lead(ctx, leader.Params{Name: "fanout", Replica: host, Lease: 5 * time.Second}, fn)
//
// # Lease and fence
//
// A name's lease is a hash holding the holder and the term's fence, which
// expires by PEXPIRE, so it ends by Redis's clock. Three Lua scripts, one
// round trip each, work on it: acquire takes it when it is absent (or
// already the caller's) with fence = max(last fence + 1, Redis TIME in
// microseconds), kept in a counter with no expiry, so fences grow even
// after a Redis without persistence restarts empty; renew extends it only
// under the presented fence (compare-and-pexpire); release deletes it only
// under the presented fence (compare-and-delete) and publishes on the
// name's channel. Keys are listed in keys.go.
//
// # Followers
//
// A follower subscribes to the name's channel, then tries acquire; when the
// lease is held, the script answers its PTTL and the follower waits exactly
// that long, or until a message on the channel says the leader released
// it. After a leader crashes, a follower takes over one round trip after
// the lease ends (TestFailoverTiming kills a leader 20 times and logs the
// figures; on loopback, 1 to 3 ms beyond the lease left); after a release,
// one round trip after the message.
//
// # Limits
//
// Redis replication is asynchronous: after a failover to a replica that
// had not received the last acquire, two replicas may both believe they
// lead until the older one's trust window ends; their fences still differ
// and grow, as TIME keeps the counter above the lost one provided the new
// master's clock is not behind. Clock jumps of the Redis host shorten or
// lengthen leases.
package redisleader
