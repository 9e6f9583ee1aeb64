package testserver

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// EtcdConfig says how StartEtcd starts a cluster.
type EtcdConfig struct {
	// Members is how many members the cluster has; zero means 3.
	Members int
	// CertFile and KeyFile, when set, make the members serve their
	// clients TLS with that certificate (peers still talk plain HTTP on
	// loopback); TrustedCAFile with ClientCertAuth makes them require a
	// client certificate that CA signed.
	CertFile, KeyFile string
	TrustedCAFile     string
	ClientCertAuth    bool
	// Args are passed to every member after the defaults.
	Args []string
}

// EtcdCluster is a private etcd cluster started by StartEtcd.
type EtcdCluster struct {
	bin     string
	cfg     EtcdConfig
	members []*EtcdMember
}

// EtcdMember is one member of an EtcdCluster.
type EtcdMember struct {
	c          *EtcdCluster
	name       string
	dir        string // data directory
	clientPort int
	peerPort   int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	frozen bool
}

// StartEtcd starts a cluster of cfg.Members etcd servers on free loopback
// ports, each with a data directory of its own under the test's temporary
// directory, waits until every member answers /health with a leader
// elected, and stops them when t ends. The members use a 50 ms heartbeat
// and a 500 ms election timeout, so a killed leader is replaced within a
// second or so, as in a production cluster on a fast network.
//
// The server is bin/etcd of the repository (scripts/setup.sh builds it from
// tools/etcd, etcd's own Go module, at the client's version), or the
// program $SLOTCRON_ETCD names, or etcd on PATH.
func StartEtcd(t testing.TB, cfg EtcdConfig) *EtcdCluster {
	t.Helper()
	bin, err := etcdBinary()
	if err != nil {
		etcdSkipOrFail(t, err)
	}
	c, err := startEtcd(bin, cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

var (
	etcdShared     *EtcdCluster
	etcdSharedDir  string
	etcdSharedErr  error
	etcdSharedOnce sync.Once
)

// SharedEtcd returns the 3-member cluster shared by every test of the
// calling package, starting it on first use, without fsync (see below). Tests sharing it must keep
// apart by a key prefix of their own, and a test that kills or freezes a
// member must bring it back before it ends. The package's TestMain must
// call StopSharedEtcd after m.Run.
func SharedEtcd(tb testing.TB) *EtcdCluster {
	tb.Helper()
	etcdSharedOnce.Do(func() {
		bin, err := etcdBinary()
		if err != nil {
			etcdSharedErr = err
			return
		}
		if etcdSharedDir, err = os.MkdirTemp("", "slotcron-etcd-"); err != nil {
			etcdSharedErr = err
			return
		}
		// Without fsync: on a shared CI disk an fsync stalls for seconds
		// at times, and every write of the cluster with it, which a test of
		// sub-second leases cannot tell from a fault. A member killed with
		// SIGKILL keeps its writes in the kernel's page cache, so a kill
		// and restart lose nothing, as with fsync.
		etcdShared, etcdSharedErr = startEtcd(bin, EtcdConfig{Args: []string{"--unsafe-no-fsync"}}, etcdSharedDir)
	})
	if etcdSharedErr != nil {
		etcdSkipOrFail(tb, etcdSharedErr)
	}
	return etcdShared
}

// StopSharedEtcd stops the shared cluster, if one was started, and removes
// its files.
func StopSharedEtcd() {
	if etcdShared != nil {
		etcdShared.Stop()
	}
	if etcdSharedDir != "" {
		os.RemoveAll(etcdSharedDir)
	}
}

// RunWithSharedEtcd is a TestMain for a package whose tests share
// SharedEtcd: it runs them, stops the cluster, and then fails the run if a
// goroutine outlived the tests. It returns the exit code.
func RunWithSharedEtcd(m *testing.M) int {
	code := m.Run()
	StopSharedEtcd()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}

// startEtcd starts a cluster of cfg in directories under root, trying
// other ports when it does not come up.
func startEtcd(bin string, cfg EtcdConfig, root string) (*EtcdCluster, error) {
	if cfg.Members == 0 {
		cfg.Members = 3
	}
	var last error
	for attempt := range startAttempts {
		c := &EtcdCluster{bin: bin, cfg: cfg}
		if err := os.MkdirAll(filepath.Join(root, strconv.Itoa(attempt)), 0o700); err != nil {
			return nil, err
		}
		for i := range cfg.Members {
			m := &EtcdMember{c: c, name: "m" + strconv.Itoa(i)}
			var err error
			if m.clientPort, err = freePort(); err != nil {
				return nil, err
			}
			if m.peerPort, err = freePort(); err != nil {
				return nil, err
			}
			m.dir = filepath.Join(root, strconv.Itoa(attempt), m.name)
			c.members = append(c.members, m)
		}
		if last = c.start(); last == nil {
			return c, nil
		}
		c.Stop()
	}
	return nil, fmt.Errorf("testserver: start etcd: %w", last)
}

// errNoEtcd reports that no etcd server was found.
var errNoEtcd = errors.New("testserver: no etcd server: run make setup (it builds bin/etcd from tools/etcd) or set SLOTCRON_ETCD")

func etcdSkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errNoEtcd) && os.Getenv("CI") != "true" {
		tb.Skip(err)
	}
	tb.Fatal(err)
}

// etcdBinary finds the etcd server.
func etcdBinary() (string, error) {
	if p := os.Getenv("SLOTCRON_ETCD"); p != "" {
		return p, nil
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			p := filepath.Join(dir, "bin", "etcd")
			if _, err := os.Stat(filepath.Join(dir, "tools", "etcd", "go.mod")); err == nil {
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", errNoEtcd
}

func (c *EtcdCluster) start() error {
	for _, m := range c.members {
		if err := m.launch("new"); err != nil {
			return err
		}
	}
	for _, m := range c.members {
		if err := m.waitHealthy(20 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// Endpoints are the members' client URLs.
func (c *EtcdCluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.ClientURL()
	}
	return out
}

// Members are the cluster's members, in the order they were started.
func (c *EtcdCluster) Members() []*EtcdMember { return c.members }

// Leader returns the member that is the cluster's leader now, as the
// members that answer say, or nil if none knows one.
func (c *EtcdCluster) Leader() *EtcdMember {
	ids := map[string]*EtcdMember{}
	var leader string
	for _, m := range c.members {
		st, err := m.status()
		if err != nil {
			continue
		}
		ids[st.Header.MemberID] = m
		if st.Leader != "" && st.Leader != "0" {
			leader = st.Leader
		}
	}
	return ids[leader]
}

// Stop kills every member. It is safe to call more than once.
func (c *EtcdCluster) Stop() {
	for _, m := range c.members {
		m.Kill()
	}
}

// Name is the member's name (m0, m1, ...).
func (m *EtcdMember) Name() string { return m.name }

// ClientURL is the URL the member serves clients on.
func (m *EtcdMember) ClientURL() string {
	scheme := "http"
	if m.c.cfg.CertFile != "" {
		scheme = "https"
	}
	return scheme + "://127.0.0.1:" + strconv.Itoa(m.clientPort)
}

// PID is the member's process id, or 0 when it is not running.
func (m *EtcdMember) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Kill kills the member (SIGKILL, as a crash would) and waits for it to
// exit; its data directory stays, for Restart. It is safe to call on a
// member that is not running.
func (m *EtcdMember) Kill() {
	m.mu.Lock()
	cmd, exited, frozen := m.cmd, m.exited, m.frozen
	m.cmd, m.frozen = nil, false
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	if frozen {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	<-exited
}

// Restart starts a killed member again on its ports with its data, to
// rejoin the cluster, and waits until it answers /health. It kills the
// member first if it runs.
func (m *EtcdMember) Restart() error {
	m.Kill()
	if err := m.launch("existing"); err != nil {
		return err
	}
	return m.waitHealthy(20 * time.Second)
}

// Freeze stops the member's process (SIGSTOP): it holds its connections
// and answers nothing, as a stalled VM would, until Thaw.
func (m *EtcdMember) Freeze() error { return m.signal(syscall.SIGSTOP, true) }

// Thaw resumes a frozen member (SIGCONT).
func (m *EtcdMember) Thaw() error { return m.signal(syscall.SIGCONT, false) }

func (m *EtcdMember) signal(sig syscall.Signal, frozen bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("etcd member %s is not running", m.name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return err
	}
	m.frozen = frozen
	return nil
}

// launch starts the member's process with the cluster state ("new" or
// "existing").
func (m *EtcdMember) launch(state string) error {
	c := m.c
	var peers []string
	for _, o := range c.members {
		peers = append(peers, o.name+"=http://127.0.0.1:"+strconv.Itoa(o.peerPort))
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(m.peerPort)
	args := []string{
		"--name", m.name, "--data-dir", m.dir,
		"--listen-client-urls", m.ClientURL(), "--advertise-client-urls", m.ClientURL(),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", state,
		"--initial-cluster-token", "slotcron-test",
		"--heartbeat-interval", "50", "--election-timeout", "500",
		"--logger", "zap", "--log-level", "warn", "--log-outputs", m.dir + ".log",
	}
	if c.cfg.CertFile != "" {
		args = append(args, "--cert-file", c.cfg.CertFile, "--key-file", c.cfg.KeyFile)
	}
	if c.cfg.TrustedCAFile != "" {
		args = append(args, "--trusted-ca-file", c.cfg.TrustedCAFile)
	}
	if c.cfg.ClientCertAuth {
		args = append(args, "--client-cert-auth")
	}
	args = append(args, c.cfg.Args...)
	cmd := exec.Command(c.bin, args...)
	OrphanProof(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// waitHealthy waits until the member answers /health with a leader.
func (m *EtcdMember) waitHealthy(patience time.Duration) error {
	deadline := time.Now().Add(patience)
	var last error
	for time.Now().Before(deadline) {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-exited:
			return fmt.Errorf("etcd member %s exited:\n%s", m.name, tail(m.dir+".log"))
		default:
		}
		resp, err := m.client().Get(m.ClientURL() + "/health")
		if err == nil {
			var h struct{ Health string }
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err == nil && h.Health == "true" {
				return nil
			}
			if err == nil {
				err = fmt.Errorf("health %q", h.Health)
			}
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("etcd member %s not healthy within %v: %v\n%s", m.name, patience, last, tail(m.dir+".log"))
}

type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

// status asks the member for its status through etcd's JSON gateway.
func (m *EtcdMember) status() (etcdStatus, error) {
	var st etcdStatus
	resp, err := m.client().Post(m.ClientURL()+"/v3/maintenance/status", "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status of %s: %s", m.name, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// client is an HTTP client for the member's health and status, which
// accepts its certificate without checking it (the tests' own CA signed
// it; the stores under test check it).
func (m *EtcdMember) client() *http.Client {
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a loopback probe of a test server
	if m.c.cfg.ClientCertAuth {
		if cert, err := tls.LoadX509KeyPair(m.c.cfg.CertFile, m.c.cfg.KeyFile); err == nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
		}
	}
	return &http.Client{Timeout: time.Second, Transport: tr}
}
