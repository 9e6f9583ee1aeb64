// TLS for the listener: a certificate and key read from files and read
// again when they change, so a renewed certificate is served without a
// restart; and, optionally, client certificates verified against a CA,
// the certificate's common name being the caller, in the role the
// configuration gives that name.

package admin

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSFiles configures TLS for the listener.
type TLSFiles struct {
	// CertFile and KeyFile hold the server's certificate (with its chain)
	// and key, PEM.
	CertFile, KeyFile string
	// ClientCAFile, when set, holds the CAs client certificates are
	// verified against (PEM); a client may then present one instead of a
	// token, in the role GuardConfig.ClientRoles gives its common name.
	ClientCAFile string
}

// certCheck is the least time between two looks at the files.
const certCheck = time.Second

// certs is the listener's certificate and client CAs as the files last
// read well held them.
type certs struct {
	files TLSFiles
	log   *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	cas     *x509.CertPool
	stamp   string // the files' digest when last read
	failed  string // the digest whose read failed last, logged once
	checked time.Time
}

// newCerts reads f's files; an error names the file that failed.
func newCerts(f TLSFiles, log *slog.Logger) (*certs, error) {
	c := &certs{files: f, log: log}
	if err := c.read(); err != nil {
		return nil, err
	}
	return c, nil
}

// stampOf is a digest of the files' contents, or the error of the first
// that cannot be read: a pair copied in with its old times (cp -p, tar),
// or of the same size, is still seen. The files are small, and looked at
// at most every certCheck.
func (c *certs) stampOf() (string, error) {
	h := sha256.New()
	for _, name := range []string{c.files.CertFile, c.files.KeyFile, c.files.ClientCAFile} {
		if name == "" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s:%d:", name, len(b))
		h.Write(b)
	}
	return string(h.Sum(nil)), nil
}

// read reads the files anew.
func (c *certs) read() error {
	stamp, err := c.stampOf()
	if err != nil {
		return fmt.Errorf("http tls: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(c.files.CertFile, c.files.KeyFile)
	if err != nil {
		return fmt.Errorf("http tls: cert_file %s, key_file %s: %w", c.files.CertFile, c.files.KeyFile, err)
	}
	var cas *x509.CertPool
	if c.files.ClientCAFile != "" {
		pem, err := os.ReadFile(c.files.ClientCAFile)
		if err != nil {
			return fmt.Errorf("http tls: client_ca_file: %w", err)
		}
		cas = x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return fmt.Errorf("http tls: client_ca_file %s: no PEM certificate in it", c.files.ClientCAFile)
		}
	}
	c.mu.Lock()
	c.cert, c.cas, c.stamp, c.checked = &cert, cas, stamp, time.Now()
	c.mu.Unlock()
	return nil
}

// current returns the certificate and CAs to serve, read again first if
// the files changed since (looked at most every certCheck). Files that no
// longer read well keep the last good ones, logged.
func (c *certs) current() (*tls.Certificate, *x509.CertPool) {
	c.mu.Lock()
	due := time.Since(c.checked) >= certCheck
	if due {
		c.checked = time.Now()
	}
	cert, cas, stamp := c.cert, c.cas, c.stamp
	c.mu.Unlock()
	if !due {
		return cert, cas
	}
	now, err := c.stampOf()
	if err == nil && now == stamp {
		return cert, cas
	}
	if err := c.read(); err != nil {
		c.mu.Lock()
		again := c.failed == now && now != ""
		c.failed = now
		c.mu.Unlock()
		if !again {
			c.log.Error("reading the TLS files again failed; serving the certificate read before", "err", err)
		}
		return cert, cas
	}
	c.log.Info("tls certificate read again", "cert_file", c.files.CertFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, c.cas
}

// config is the listener's TLS configuration.
func (c *certs) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, cas := c.current()
			if cert == nil {
				return nil, errors.New("no certificate")
			}
			cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
			if cas != nil {
				cfg.ClientCAs, cfg.ClientAuth = cas, tls.VerifyClientCertIfGiven
			}
			return cfg, nil
		}}
}
