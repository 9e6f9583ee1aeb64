package redisstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/slotstore"
)

// DefaultPrefix starts every key the store writes when Options.Prefix is
// empty.
const DefaultPrefix = "slotcron:"

// DefaultAddr is the server Open connects to when Options names no address.
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

// MaxTimeout bounds each timeout of Options: ten years, far beyond any
// use, the bound every duration of slotcron's configuration keeps.
const MaxTimeout = 10 * 365 * 24 * time.Hour

// Options says how Open connects; New, which takes a client the caller
// made, reads only Prefix. The zero value connects to a standalone
// Redis on DefaultAddr with no authentication and keys under DefaultPrefix.
// It is the store.redis block of the YAML configuration: each field's tag
// is its key there, and Validate names the keys of the settings it
// refuses.
type Options struct {
	// Addr is one server, host:port. It is the first of the addresses,
	// before Addrs: the two are one list, so a configuration can name a
	// single server with addr and a Cluster or the Sentinels with addrs.
	Addr string `yaml:"addr"`
	// Addrs are more servers, host:port. One address in all (Addr and
	// Addrs together) is a standalone server; several are seeds of a Redis
	// Cluster; with MasterName set they are Sentinels instead. No address
	// at all means DefaultAddr.
	Addrs []string `yaml:"addrs"`
	// MasterName, when set, is the name of the master the Sentinels at the
	// addresses watch: the store follows the master across failovers. The
	// Sentinels themselves are contacted without authentication.
	MasterName string `yaml:"master_name"`
	// Username and Password authenticate to the Redis servers (ACL user, or
	// just the password for requirepass). Empty means none. The password
	// never appears in an error.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// DB is the database number. Zero means 0; a Cluster has only database 0.
	DB int `yaml:"db"`
	// TLS configures encrypted connections; the zero value means plain TCP.
	TLS TLSOptions `yaml:"tls"`
	// Prefix starts every key the store writes, so several deployments can
	// share one Redis. Empty means DefaultPrefix. It must not contain braces,
	// which Redis Cluster reads as a hash tag.
	Prefix string `yaml:"prefix"`
	// DialTimeout bounds establishing a connection; zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// ReadTimeout bounds waiting for a reply; zero means
	// DefaultReadTimeout. A request whose reply does not come in time fails
	// with an error wrapping slotstore.ErrOutcomeUnknown.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds sending a request; zero means ReadTimeout.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// PoolSize is the number of connections kept per server; zero means ten
	// per CPU.
	PoolSize int `yaml:"pool_size"`
	// WaitReplicas, when positive, makes every claim, renewal and finish
	// wait, in the same round trip, until that many replicas of the master
	// that ran it have acknowledged its writes (WAIT). A call that fewer
	// replicas acknowledged within WaitTimeout fails with an error wrapping
	// both slotstore.ErrOutcomeUnknown and ErrNotReplicated: the master
	// applied it, and a failover may lose it.
	// Zero, the default, does not wait. The package documentation says
	// what this guarantees and what it does not.
	WaitReplicas int `yaml:"wait_replicas"`
	// WaitTimeout bounds each wait for replicas; zero means
	// DefaultWaitTimeout, or half of ReadTimeout if that is shorter. It
	// must be at least a millisecond and shorter than ReadTimeout, which
	// bounds the whole round trip, and is an error without WaitReplicas.
	WaitTimeout time.Duration `yaml:"wait_timeout"`
}

// TLSOptions configures TLS. The fields after Enabled take effect only with
// Enabled true, and setting one of them without it is an error, so a
// half-written configuration does not silently fall back to plain TCP.
//
// In YAML it is written either as a boolean (tls: true) or as a mapping of
// the keys below, which turns TLS on unless it says enabled: false.
type TLSOptions struct {
	// Enabled turns TLS on.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM file of the certificate authorities to trust; empty
	// means the system's.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// servers that ask for one (tls-auth-clients). Both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the server's certificate must carry; empty means
	// the host of the address dialled.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any server certificate. Off by default; only
	// for tests.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// UnmarshalYAML reads tls: true|false, or a mapping of TLSOptions' keys
// that turns TLS on unless it says enabled: false.
func (t *TLSOptions) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		// As strconv reads it, quoted or not: tls: "${REDIS_TLS}" works.
		if on, err := strconv.ParseBool(n.Value); err == nil {
			*t = TLSOptions{Enabled: on}
			return nil
		}
	case yaml.MappingNode:
		type plain TLSOptions // without this method
		p := plain{Enabled: true}
		if err := n.Decode(&p); err != nil {
			return err
		}
		*t = TLSOptions(p)
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want true, false or a mapping, not %q", n.Line, n.Value)}}
}

// addrs is every address, Addr first, in a slice of its own.
func (o Options) addrs() []string {
	out := make([]string, 0, 1+len(o.Addrs))
	if o.Addr != "" {
		out = append(out, o.Addr)
	}
	return append(out, o.Addrs...)
}

// Validate reports every setting of o that Open would refuse, as
// errors.Join of errors each naming the setting's YAML key ("db: ...",
// "tls.cert_file: ..."). It returns nil when Open can use o. It reads no
// file and contacts no server: a CA file that cannot be read is Open's
// error.
func (o Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, optkey.Errorf(key, format, args...)) }
	for i, a := range o.Addrs {
		if a == "" {
			bad("addrs", "entry %d is empty", i+1)
		}
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		bad("prefix", "%q contains a brace, which Redis Cluster reads as a hash tag", o.Prefix)
	}
	switch {
	case o.DB < 0:
		bad("db", "must not be negative")
	case o.DB != 0 && o.MasterName == "" && len(o.addrs()) > 1:
		bad("db", "must be 0 in Cluster mode (several addresses without master_name): a Cluster has only database 0")
	}
	timeoutsOK := true
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"dial_timeout", o.DialTimeout}, {"read_timeout", o.ReadTimeout}, {"write_timeout", o.WriteTimeout}, {"wait_timeout", o.WaitTimeout}} {
		switch {
		case d.d < 0:
			timeoutsOK = false
			bad(d.key, "must not be negative")
		case d.d > MaxTimeout:
			timeoutsOK = false
			bad(d.key, "%v is longer than %v (ten years)", d.d, MaxTimeout)
		}
	}
	if o.PoolSize < 0 {
		bad("pool_size", "must not be negative")
	}
	switch {
	case o.WaitReplicas < 0:
		bad("wait_replicas", "must not be negative")
	case o.WaitReplicas == 0 && o.WaitTimeout != 0:
		bad("wait_timeout", "is set but wait_replicas is 0")
	case o.WaitReplicas > 0 && timeoutsOK:
		d := o.withDefaults()
		switch {
		case o.WaitTimeout == 0 && d.WaitTimeout < time.Millisecond:
			bad("read_timeout", "%v leaves the wait for replicas, half of it by default, under a millisecond", d.ReadTimeout)
		case d.WaitTimeout < time.Millisecond || d.WaitTimeout >= d.ReadTimeout:
			bad("wait_timeout", "%v: want at least a millisecond and less than read_timeout %v, which bounds the whole call",
				d.WaitTimeout, d.ReadTimeout)
		}
	}
	t := o.TLS
	if !t.Enabled {
		var set []string
		for _, f := range []struct {
			key string
			set bool
		}{{"ca_file", t.CAFile != ""}, {"cert_file", t.CertFile != ""}, {"key_file", t.KeyFile != ""},
			{"server_name", t.ServerName != ""}, {"insecure_skip_verify", t.InsecureSkipVerify}} {
			if f.set {
				set = append(set, f.key)
			}
		}
		if len(set) > 0 {
			bad("tls", "%s given but tls is off (enabled: false)", strings.Join(set, ", "))
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		bad("tls.cert_file", "is set but key_file is not: cert_file and key_file go together")
	case t.KeyFile != "" && t.CertFile == "":
		bad("tls.key_file", "is set but cert_file is not: cert_file and key_file go together")
	}
	return errors.Join(errs...)
}

// withDefaults returns o, which Validate accepted, with its addresses in
// Addrs alone and every zero setting replaced by its default.
func (o Options) withDefaults() Options {
	o.Addrs, o.Addr = o.addrs(), ""
	if len(o.Addrs) == 0 {
		o.Addrs = []string{DefaultAddr}
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
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
	if o.WaitReplicas > 0 && o.WaitTimeout == 0 {
		o.WaitTimeout = min(DefaultWaitTimeout, o.ReadTimeout/2)
	}
	return o
}

// universal returns the go-redis options for o, which Validate accepted and
// withDefaults completed.
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
