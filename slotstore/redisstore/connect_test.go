package redisstore_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

// TestSentinel: with MasterName set, Addrs are Sentinels and the store
// works on the master they name.
func TestSentinel(t *testing.T) {
	m := testserver.StartRedis(t)
	s := testserver.StartRedisSentinel(t, m, "main")
	storetest.Run(t, func(t *testing.T) slotstore.Store {
		return openWith(t, redisstore.Options{Addrs: []string{s.Addr()}, MasterName: "main"})
	})
}

// TestDB: the store keeps its keys in the database Options.DB names.
func TestDB(t *testing.T) {
	r := testserver.StartRedis(t)
	s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, DB: 3, Prefix: "db:"})
	won(t, claim(t, s, "r1", batch("db", 0, 1, time.Minute)...))
	for db, want := range map[int]int64{0: 0, 3: 1} {
		c := redis.NewClient(&redis.Options{Addr: r.Addr(), DB: db})
		n, err := c.Exists(t.Context(), "db:{db}:fence").Result()
		c.Close()
		if err != nil || n != want {
			t.Errorf("fence key in db %d: %d, %v; want %d", db, n, err, want)
		}
	}
}

// TestTLS: the TLS options reach the server, and a server that cannot be
// verified, or that wants a client certificate the store lacks, is refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", ca, caKey)
	newCert(t, dir, "client", ca, caKey)
	port := testserver.FreePort(t)
	testserver.StartRedis(t, "--tls-port", strconv.Itoa(port), "--tls-auth-clients", "yes",
		"--tls-cert-file", filepath.Join(dir, "server.pem"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	full := redisstore.TLSOptions{
		Enabled: true, CAFile: filepath.Join(dir, "ca.pem"), ServerName: "redis.test",
		CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client.key"),
	}
	s := openWith(t, redisstore.Options{Addrs: []string{addr}, TLS: full})
	won(t, claim(t, s, "r1", batch("tls", 0, 1, time.Minute)...))

	noClientCert, unknownCA, wrongName := full, full, full
	noClientCert.CertFile, noClientCert.KeyFile = "", ""
	unknownCA.CAFile = ""
	wrongName.ServerName = "other.test"
	for name, o := range map[string]redisstore.TLSOptions{
		"no client certificate": noClientCert, "system roots only": unknownCA, "wrong server name": wrongName,
	} {
		s, err := redisstore.Open(t.Context(), redisstore.Options{Addrs: []string{addr}, TLS: o, DialTimeout: time.Second})
		if err == nil {
			s.Close()
			t.Errorf("%s: connected", name)
		}
	}
}

// newCert writes name.pem and name.key to dir: a CA when parent is nil,
// else a certificate for redis.test and 127.0.0.1 signed by parent.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.DNSNames = []string{"redis.test"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, kind string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".pem", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
