package etcdstore_test

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// TestMain shares one private 3-member cluster among the package's tests,
// started by the first test that needs it, stops it after them, and then
// checks that no goroutine outlived its test.
func TestMain(m *testing.M) {
	code := m.Run()
	shared.stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is the package's cluster.
var shared sharedCluster

type sharedCluster struct {
	once    sync.Once
	c       *testserver.EtcdCluster
	skip    string // why the cluster could not be started, to skip
	fail    string // or to fail
	cleanup []func()
}

// sharedEtcd returns the cluster the package's tests share, starting it on
// first use. Tests keep apart by a prefix of their own (freshPrefix); a
// test that kills or freezes a member restores it before it ends.
func sharedEtcd(t testing.TB) *testserver.EtcdCluster {
	t.Helper()
	shared.once.Do(shared.start)
	switch {
	case shared.skip != "":
		t.Skip(shared.skip)
	case shared.fail != "":
		t.Fatal(shared.fail)
	}
	return shared.c
}

// start starts the cluster with testserver.StartEtcd, which wants a
// testing.TB; mainTB stands for the whole test binary, whose cleanups run
// after every test (stop). StartEtcd ends a failed or skipped start with
// runtime.Goexit, so it runs on a goroutine of its own.
func (s *sharedCluster) start() {
	done := make(chan struct{})
	tb := &mainTB{s: s}
	go func() {
		defer close(done)
		s.c = testserver.StartEtcd(tb, testserver.EtcdConfig{})
	}()
	<-done
	if s.c == nil && s.skip == "" && s.fail == "" {
		s.fail = "testserver: the shared etcd cluster did not start"
	}
}

func (s *sharedCluster) stop() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// mainTB is the testing.TB of the shared cluster. Only the methods
// StartEtcd calls are implemented; the embedded nil TB makes any other a
// loud failure.
type mainTB struct {
	testing.TB
	s *sharedCluster
}

func (tb *mainTB) Helper() {}
func (tb *mainTB) Cleanup(f func()) {
	tb.s.cleanup = append(tb.s.cleanup, f)
}
func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "etcdstore-test-")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
func (tb *mainTB) Logf(format string, args ...any) {}
func (tb *mainTB) Fatalf(format string, args ...any) {
	tb.s.fail = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (tb *mainTB) Fatal(args ...any) {
	tb.s.fail = fmt.Sprint(args...)
	runtime.Goexit()
}
func (tb *mainTB) Skip(args ...any) {
	tb.s.skip = fmt.Sprint(args...)
	runtime.Goexit()
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

// nextHour is the start of the next hour: slots from it on are after the
// generation of any job of a fresh store.
func nextHour() time.Time { return time.Now().UTC().Truncate(time.Hour).Add(time.Hour) }
