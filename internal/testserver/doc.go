// Package testserver starts private servers for tests: a redis-server (or a
// Redis Cluster of several) on free loopback ports, and a TCP proxy that can
// cut or blackhole the connections passing through it. Tests never talk to a
// server that happens to be running on the machine; every server here is
// started by the test, in the test's own temporary directory, and stopped
// when the test ends.
//
// # Binaries
//
// The servers are the real programs, found on PATH (redis-server and
// redis-cli from the Debian package redis-server, version 7.0 or newer).
// When a binary is missing, the test is skipped with a message naming it,
// unless the environment has CI=true: there the test fails instead, so a CI
// machine without the binary cannot pass by skipping.
//
// # Redis
//
// StartRedis starts one redis-server with no persistence (--save "",
// --appendonly no), so Restart brings it back empty, as a production Redis
// without persistence comes back after a crash. StartRedisCluster starts
// several redis-server --cluster-enabled yes, joins them with
// redis-cli --cluster create (masters only, no replicas) and waits until
// every node reports cluster_state:ok. StartRedisSentinel starts a Sentinel
// watching a server started by StartRedis. FreePort finds a port for a
// listener a test configures itself, such as a TLS port.
//
// # etcd
//
// StartEtcd starts a cluster of etcd servers (3 members unless
// EtcdConfig.Members says otherwise) on free loopback ports, optionally
// serving its clients TLS, and waits until every member is healthy under
// an elected leader. EtcdMember.Kill, Restart, Freeze and Thaw crash,
// restart, stop (SIGSTOP) and resume one member; EtcdCluster.Leader names
// the member that leads. The server is bin/etcd, which scripts/setup.sh
// builds from tools/etcd (etcd's own Go module, at the version of the
// client slotcron uses), or $SLOTCRON_ETCD, or etcd on PATH.
//
// # Proxy
//
// StartProxy forwards a loopback port to a target address. Cut drops every
// connection and refuses new ones, so a request either never leaves the
// client or is lost with its connection; Blackhole keeps connections open
// but forwards nothing, so a request leaves the client and no reply ever
// comes back; Restore forwards again.
//
// Every helper takes a testing.TB, stops what it started in t.Cleanup, and
// reports failures with t.Fatal, so tests read as a list of servers they need.
package testserver
