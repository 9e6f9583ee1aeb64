package etcdstore_test

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
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// pki is a certificate authority and the files of certificates it signed.
type pki struct {
	t    *testing.T
	dir  string
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	CA   string // the CA's certificate file
}

func newPKI(t *testing.T) *pki {
	p := &pki{t: t, dir: t.TempDir()}
	p.key = newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slotcron test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	if p.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.CA = p.write("ca.pem", "CERTIFICATE", der)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// issue signs a certificate for name, good for servers on 127.0.0.1 and
// for clients, and returns its certificate and key files.
func (p *pki) issue(name string, serial int64) (certFile, keyFile string) {
	key := newKey(p.t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name+".pem", "CERTIFICATE", der), p.write(name+"-key.pem", "EC PRIVATE KEY", kd)
}

func (p *pki) write(name, kind string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// TestTLSClientCertificate: a cluster that serves TLS and requires client
// certificates signed by its CA is reached with the CA, a client
// certificate and its key; without the certificate, or trusting another
// CA, Open fails naming the endpoint.
func TestTLSClientCertificate(t *testing.T) {
	ca := newPKI(t)
	serverCert, serverKey := ca.issue("server", 2)
	clientCert, clientKey := ca.issue("client", 3)
	c := testserver.StartEtcd(t, testserver.EtcdConfig{
		Members: 1, CertFile: serverCert, KeyFile: serverKey, TrustedCAFile: ca.CA, ClientCertAuth: true,
	})
	eps := c.Endpoints()
	if !strings.HasPrefix(eps[0], "https://") {
		t.Fatalf("endpoints %v, want https", eps)
	}
	s := openWith(t, etcdstore.Options{Endpoints: eps, TLS: etcdstore.TLSOptions{CAFile: ca.CA, CertFile: clientCert, KeyFile: clientKey}})
	res := claim(t, s, "r", slotstore.ClaimRequest{Job: "tls", Slot: nextHour(), Lease: time.Minute})
	won(t, res)
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatalf("finish over TLS: %v", err)
	}
	// The name the certificate carries, when the endpoint's host is not it.
	named := openWith(t, etcdstore.Options{Endpoints: eps, Prefix: s.Prefix(),
		TLS: etcdstore.TLSOptions{CAFile: ca.CA, CertFile: clientCert, KeyFile: clientKey, ServerName: "localhost"}})
	if ms, err := named.History(t.Context(), slotstore.HistoryParams{Job: "tls"}); err != nil || len(ms) != 1 {
		t.Errorf("history with server_name: %+v, %v", ms, err)
	}

	other := newPKI(t)
	for name, o := range map[string]etcdstore.Options{
		"no client certificate": {Endpoints: eps, TLS: etcdstore.TLSOptions{CAFile: ca.CA}, DialTimeout: time.Second},
		"another CA": {Endpoints: eps, DialTimeout: time.Second,
			TLS: etcdstore.TLSOptions{CAFile: other.CA, CertFile: clientCert, KeyFile: clientKey}},
		"plain http": {Endpoints: []string{strings.Replace(eps[0], "https://", "http://", 1)}, DialTimeout: time.Second},
	} {
		st, err := etcdstore.Open(t.Context(), o)
		if err == nil {
			st.Close()
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		if !strings.Contains(err.Error(), strings.TrimPrefix(o.Endpoints[0], "https://")) {
			t.Errorf("%s: %v, want the endpoint named", name, err)
		}
	}
	if _, err := etcdstore.Open(t.Context(), etcdstore.Options{Endpoints: eps, TLS: etcdstore.TLSOptions{CAFile: serverKey}}); err == nil ||
		!strings.Contains(err.Error(), "CA file") {
		t.Errorf("a CA file with no certificate: %v", err)
	}
}
