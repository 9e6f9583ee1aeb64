package etcdstore_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// TestMain runs the tests on one private 3-member cluster they share
// (testserver.SharedEtcd), stops it, and then checks that no goroutine
// outlived them.
func TestMain(m *testing.M) { os.Exit(testserver.RunWithSharedEtcd(m)) }

// sharedEtcd returns the cluster the package's tests share, starting it on
// first use. Tests keep apart by a prefix of their own (freshPrefix); a
// test that kills or freezes a member restores it before it ends.
func sharedEtcd(t testing.TB) *testserver.EtcdCluster {
	t.Helper()
	return testserver.SharedEtcd(t)
}

// prefixes makes every store of a test process a keyspace of its own.
var prefixes atomic.Int64

// freshPrefix is a prefix no other store of the test process uses.
func freshPrefix() string {
	return fmt.Sprintf("test-%d-%d/", os.Getpid(), prefixes.Add(1))
}

// open returns a store on the shared cluster under a fresh prefix, closed
// when t ends.
func open(t testing.TB) *etcdstore.Store {
	t.Helper()
	return openWith(t, etcdstore.Options{})
}

// openWith opens a store on the shared cluster with o: its endpoints and
// a fresh prefix unless o names them. It is closed when t ends.
func openWith(t testing.TB, o etcdstore.Options) *etcdstore.Store {
	t.Helper()
	if len(o.Endpoints) == 0 {
		o.Endpoints = sharedEtcd(t).Endpoints()
	}
	if o.Prefix == "" {
		o.Prefix = freshPrefix()
	}
	s, err := etcdstore.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("open store on %v: %v", o.Endpoints, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// nextHour is the start of the next hour at least a minute away: slots from
// it on are after the generation of any job a test begins (a job born in
// the last second before an hour would not cover that hour's first slot:
// slotstore.ClaimLead).
func nextHour() time.Time {
	return time.Now().Add(time.Minute).UTC().Truncate(time.Hour).Add(time.Hour)
}
