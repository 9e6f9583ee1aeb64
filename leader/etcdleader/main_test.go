package etcdleader_test

import (
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// TestMain runs the tests on one private 3-member cluster they share
// (testserver.SharedEtcd), stops it, and then checks that no goroutine
// outlived them.
func TestMain(m *testing.M) { os.Exit(testserver.RunWithSharedEtcd(m)) }

// cluster returns the etcd cluster of the package's tests
// (testserver.SharedEtcd), starting it on first use. Tests sharing it keep
// apart by key prefix (newPrefix); a test that kills or freezes a member
// brings it back before it ends.
func cluster(t testing.TB) *testserver.EtcdCluster {
	t.Helper()
	return testserver.SharedEtcd(t)
}

var prefixes atomic.Int64

// newPrefix returns a key prefix no other test, or test process, uses.
func newPrefix() string { return fmt.Sprintf("test-%d-%d/", os.Getpid(), prefixes.Add(1)) }

// newClient returns a client of the given endpoints, closed when t ends,
// configured as New's documentation asks.
func newClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// elector returns an elector on c under prefix.
func elector(t testing.TB, c *clientv3.Client, o etcdleader.Options) leader.Elector {
	t.Helper()
	e, err := etcdleader.New(c, o)
	if err != nil {
		t.Fatalf("etcdleader.New: %v", err)
	}
	return e
}

var quiet = slog.New(slog.DiscardHandler)
