package scheduler

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slotcron test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate of serial for cn (a server's for 127.0.0.1
// when server) and its key to dir/name.pem and dir/name.key.
func (ca *testCA) issue(t *testing.T, dir, name, cn string, serial int64, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.IPAddresses, tmpl.ExtKeyUsage = []net.IP{net.ParseIP("127.0.0.1")}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	// The key first, then the certificate, each renamed into place: a
	// reader sees the old pair or the new.
	for _, f := range []struct {
		path string
		blk  *pem.Block
	}{{keyFile, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}}, {certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(f.blk), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// TestHTTPTLS: with http.tls the listener serves HTTPS only — curl with the
// CA succeeds, plain HTTP is refused —, a certificate replaced on disk is
// served without a restart, and a client certificate stands for a token:
// its common name is the caller, in the role client_roles gives it; a name
// given none is refused.
func TestHTTPTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port")
	}
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := ca.issue(t, dir, "server", "127.0.0.1", 100, true)
	botCert, botKey := ca.issue(t, dir, "bot", "ci-bot", 200, false)
	strangerCert, strangerKey := ca.issue(t, dir, "stranger", "stranger", 300, false)
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	doc := fmt.Sprintf("http: {listen: %q, tls: {cert_file: %q, key_file: %q, client_ca_file: %q, client_roles: {ci-bot: operator}}}\n"+
		"jobs: {hello: {schedule: '@hourly'}}\n", addr, certFile, keyFile, caFile)
	_, _, reg := rig(&recorder{}, "hello")
	s := replica(t, memstore.New(memstore.Options{}), "a", doc, reg)
	stop := start(t, s)
	defer stop()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	served := func() (int64, error) {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
	}
	poll.Until(t, 10*time.Second, "the HTTPS listener", func() error { _, err := served(); return err })

	curl := func(args ...string) (string, error) {
		out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "10"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl not found: scripts/setup.sh installs it")
	}
	if out, err := curl("--cacert", caFile, "https://"+addr+"/healthz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("curl --cacert /healthz: %v %q", err, out)
	}
	if out, err := curl("-w", " %{http_code}", "http://"+addr+"/healthz"); err != nil || !strings.HasSuffix(out, " 400") {
		t.Fatalf("plain HTTP: %v %q, want a 400", err, out)
	}
	if out, err := curl("https://" + addr + "/healthz"); err == nil {
		t.Fatalf("a certificate no CA of the system's signed was accepted: %q", out)
	}
	// A client certificate stands for a token.
	out, err := curl("--cacert", caFile, "--cert", botCert, "--key", botKey, "https://"+addr+"/api/whoami")
	if err != nil || !strings.Contains(out, `"name":"ci-bot"`) || !strings.Contains(out, `"role":"operator"`) {
		t.Fatalf("whoami with the bot's certificate: %v %q", err, out)
	}
	out, err = curl("--cacert", caFile, "--cert", botCert, "--key", botKey, "-X", "POST", "-w", " %{http_code}", "https://"+addr+"/api/pause",
		"-H", "Content-Type: application/json", "-d", `{"reason":"all of it"}`)
	if err != nil || !strings.HasSuffix(out, " 403") || !strings.Contains(out, `needs the admin role; client certificate \"ci-bot\" has the operator role`) {
		t.Fatalf("a cluster pause by an operator's certificate: %v %q", err, out)
	}
	out, err = curl("--cacert", caFile, "--cert", botCert, "--key", botKey, "-X", "POST", "-w", " %{http_code}", "https://"+addr+"/api/pause",
		"-H", "Content-Type: application/json", "-d", `{"job":"hello","reason":"by certificate"}`)
	if err != nil || !strings.HasSuffix(out, " 200") {
		t.Fatalf("a job's pause by an operator's certificate: %v %q", err, out)
	}
	out, err = curl("--cacert", caFile, "--cert", strangerCert, "--key", strangerKey, "-X", "POST", "-w", " %{http_code}",
		"https://"+addr+"/api/pause", "-H", "Content-Type: application/json", "-d", `{"job":"hello","reason":"x"}`)
	if err != nil || !strings.HasSuffix(out, " 403") || !strings.Contains(out, "no role") {
		t.Fatalf("a certificate with no role: %v %q", err, out)
	}
	// A certificate of the same name from another CA ends the handshake;
	// one with no role reads as anyone may.
	other := newTestCA(t)
	forgedCert, forgedKey := other.issue(t, dir, "forged", "ci-bot", 400, false)
	if out, err := curl("--cacert", caFile, "--cert", forgedCert, "--key", forgedKey, "https://"+addr+"/api/whoami"); err == nil {
		t.Fatalf("a certificate another CA signed was taken: %q", out)
	}
	out, err = curl("--cacert", caFile, "--cert", strangerCert, "--key", strangerKey, "-w", " %{http_code}", "https://"+addr+"/api/whoami")
	if err != nil || !strings.HasSuffix(out, " 200") || strings.Contains(out, "stranger") {
		t.Fatalf("an open read with a certificate that has no role: %v %q", err, out)
	}
	out, err = curl("--cacert", caFile, "https://"+addr+"/api/actions?kind=pause")
	if err != nil || !strings.Contains(out, `"who":"ci-bot"`) || !strings.Contains(out, `"reason":"by certificate"`) {
		t.Fatalf("the pause in the actions log: %v %q", err, out)
	}
	// A certificate replaced on disk is served without a restart.
	ca.issue(t, dir, "server", "127.0.0.1", 101, true)
	poll.Until(t, 15*time.Second, "the new certificate served", func() error {
		n, err := served()
		if err == nil && n != 101 {
			err = fmt.Errorf("serial %d served", n)
		}
		return err
	})
}
