package redisstore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
)

// DefaultPrefix starts every key the store writes when Options.Prefix is
// empty.
const DefaultPrefix = "slotcron:"

// DefaultAddr is the server New connects to when Options.Addrs is empty.
const DefaultAddr = "127.0.0.1:6379"

// Timeouts used when Options leaves them zero.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultReadTimeout = 3 * time.Second
	// DefaultWaitTimeout bounds the wait for replicas (Options.WaitTimeout),
	// or half the read timeout when that is shorter. A replica that is up
	// acknowledges within a round trip between it and the master.
	DefaultWaitTimeout = time.Second
)

// Options says how New connects. The zero value connects to a standalone
// Redis on DefaultAddr with no authentication and keys under DefaultPrefix.
// It maps one-to-one onto the store.redis block of the YAML configuration.
type Options struct {
	// Addrs are the servers, host:port. One address is a standalone server;
	// several are seeds of a Redis Cluster; with MasterName set they are
	// Sentinels instead. Empty means DefaultAddr.
	Addrs []string
	// MasterName, when set, is the name of the master the Sentinels at Addrs
	// watch: the store follows the master across failovers. The Sentinels
	// themselves are contacted without authentication.
	MasterName string
	// Username and Password authenticate to the Redis servers (ACL user, or
	// just the password for requirepass). Empty means none. The password
	// never appears in an error.
	Username, Password string
	// DB is the database number. Zero means 0; a Cluster has only database 0.
	DB int
	// TLS configures encrypted connections; the zero value means plain TCP.
	TLS TLSOptions
	// Prefix starts every key the store writes, so several deployments can
	// share one Redis. Empty means DefaultPrefix. It must not contain braces,
	// which Redis Cluster reads as a hash tag.
	Prefix string
	// DialTimeout bounds establishing a connection; zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for a reply; zero means
	// DefaultReadTimeout. A request whose
	// reply does not come in time fails with an error for which
	// slotstore.IsOutcomeUnknown reports true.
	ReadTimeout time.Duration
	// WriteTimeout bounds sending a request; zero means ReadTimeout.
	WriteTimeout time.Duration
	// PoolSize is the number of connections kept per server; zero means ten
	// per CPU.
	PoolSize int
	// WaitReplicas, when positive, makes every claim, renewal and finish
	// wait, in the same round trip, until that many replicas of the master
	// that ran it have acknowledged its writes (WAIT). A call that fewer
	// replicas acknowledged within WaitTimeout fails with an error for
	// which slotstore.IsOutcomeUnknown reports true and errors.Is finds
	// ErrNotReplicated: the master applied it, and a failover may lose it.
	// Zero, the default, does not wait. The package documentation says
	// what this guarantees and what it does not.
	WaitReplicas int
	// WaitTimeout bounds each wait for replicas; zero means
	// DefaultWaitTimeout, or half of ReadTimeout if that is shorter. It
	// must be shorter than ReadTimeout, which bounds the whole round trip,
	// and is an error without WaitReplicas.
	WaitTimeout time.Duration
}

// TLSOptions configures TLS. The fields after Enabled take effect only with
// Enabled true, and setting one of them without it is an error, so a
// half-written configuration does not silently fall back to plain TCP.
type TLSOptions struct {
	// Enabled turns TLS on.
	Enabled bool
	// CAFile is a PEM file of the certificate authorities to trust; empty
	// means the system's.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// servers that ask for one (tls-auth-clients). Both or neither.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must carry; empty means
	// the host of the address dialled.
	ServerName string
	// InsecureSkipVerify accepts any server certificate. Off by default; only
	// for tests.
	InsecureSkipVerify bool
}

// validate checks o and returns it with defaults filled in.
func (o Options) validate() (Options, error) {
	fail := func(format string, args ...any) (Options, error) {
		return o, fmt.Errorf("redisstore: options: %w: "+format, append([]any{slotstore.ErrInvalid}, args...)...)
	}
	if len(o.Addrs) == 0 {
		o.Addrs = []string{DefaultAddr}
	}
	for _, a := range o.Addrs {
		if a == "" {
			return fail("empty address in %q", o.Addrs)
		}
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return fail("prefix %q contains a brace", o.Prefix)
	}
	if o.DB < 0 {
		return fail("db %d is negative", o.DB)
	}
	if o.DB != 0 && o.MasterName == "" && len(o.Addrs) > 1 {
		return fail("db %d: a Redis Cluster has only database 0", o.DB)
	}
	if o.DialTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 {
		return fail("timeouts must not be negative: dial %v, read %v, write %v", o.DialTimeout, o.ReadTimeout, o.WriteTimeout)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = o.ReadTimeout
	}
	if o.PoolSize < 0 {
		return fail("pool size %d is negative", o.PoolSize)
	}
	if o.WaitReplicas < 0 {
		return fail("wait replicas %d is negative", o.WaitReplicas)
	}
	switch {
	case o.WaitReplicas == 0 && o.WaitTimeout != 0:
		return fail("wait timeout %v given but wait replicas is zero", o.WaitTimeout)
	case o.WaitReplicas == 0:
	case o.WaitTimeout < 0:
		return fail("wait timeout %v is negative", o.WaitTimeout)
	case o.WaitTimeout == 0:
		o.WaitTimeout = min(DefaultWaitTimeout, o.ReadTimeout/2)
	}
	if o.WaitReplicas > 0 && (o.WaitTimeout < time.Millisecond || o.WaitTimeout >= o.ReadTimeout) {
		return fail("wait timeout %v: want at least a millisecond and less than the read timeout %v, which bounds the whole call",
			o.WaitTimeout, o.ReadTimeout)
	}
	t := o.TLS
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify) {
		return fail("tls settings given but tls is not enabled")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return fail("tls: cert file and key file go together")
	}
	return o, nil
}

// universal returns the go-redis options for o, which validate has checked.
// Retries are off: a request go-redis sent again after a lost reply could
// run a claim twice and report the second, losing answer.
func (o Options) universal() (*redis.UniversalOptions, error) {
	tc, err := o.TLS.config()
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{
		Addrs:                 o.Addrs,
		MasterName:            o.MasterName,
		Username:              o.Username,
		Password:              o.Password,
		DB:                    o.DB,
		TLSConfig:             tc,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		PoolSize:              o.PoolSize,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		ClientName:            "slotcron",
	}, nil
}

// config builds the tls.Config, or nil when TLS is off.
func (t TLSOptions) config() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redisstore: tls: read CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redisstore: tls: %w: no PEM certificate in CA file %s", slotstore.ErrInvalid, t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redisstore: tls: load client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
