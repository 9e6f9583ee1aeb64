package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/slotstore"
)

// Defaults used when Options leaves a setting zero.
const (
	// DefaultEndpoint is the member Open connects to when Options names
	// none.
	DefaultEndpoint = "http://127.0.0.1:2379"
	// DefaultPrefix starts every key the store writes.
	DefaultPrefix = "slotcron/"
	// DefaultDialTimeout bounds the first contact with the cluster.
	DefaultDialTimeout = 5 * time.Second
	// DefaultRequestTimeout bounds each request to etcd. A member that
	// answers a healthy cluster's request takes milliseconds; one that
	// takes a second is frozen, cut off, or lost the proposal with a
	// leader that died, and the request is better sent again to another.
	DefaultRequestTimeout = time.Second
	// DefaultLeaseTTL is the TTL of the process's etcd lease. It outlasts
	// gRPC's detection of a silent member (its keepalive pings start after
	// 10 s of silence at the earliest), so a frozen member that carried the
	// lease's keepalive stream does not cost the lease: the client moves
	// the stream to another member first.
	DefaultLeaseTTL = 20 * time.Second
	// DefaultMaxTxnOps is etcd's own default limit on the operations of a
	// transaction (--max-txn-ops).
	DefaultMaxTxnOps = 128
)

// The store's clocks (Options.ClockSource).
const (
	ClockEtcd  = "etcd"
	ClockLocal = "local"
)

// Limits of the settings.
const (
	// MinMaxTxnOps is the smallest MaxTxnOps: the operations one claim
	// may need in a transaction of its own.
	MinMaxTxnOps = 16
	// MaxTimeout bounds each timeout and the lease TTL: ten years, the
	// bound every duration of slotcron's configuration keeps.
	MaxTimeout = 10 * 365 * 24 * time.Hour
)

// Options says how Open connects. The zero value connects to a member on
// DefaultEndpoint without TLS or authentication and keeps keys under
// DefaultPrefix. It is the store.etcd block of the YAML configuration:
// each field's tag is its key there, and Validate names the keys of the
// settings it refuses.
type Options struct {
	// Endpoints are the client URLs of the cluster's members
	// (http://host:2379, https://host:2379); list them all, so the client
	// fails over when one is down. Empty means DefaultEndpoint.
	Endpoints []string `yaml:"endpoints"`
	// Username and Password authenticate to etcd when its auth is enabled;
	// empty means none. The user needs read and write permission on the
	// keys under Prefix. The password never appears in an error.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// TLS configures encrypted connections. It is on when the endpoints
	// are https:// or any of its settings is given.
	TLS TLSOptions `yaml:"tls"`
	// Prefix starts every key the store writes, so several deployments
	// can share a cluster. It always ends with "/" (one is added when it
	// does not). Empty means DefaultPrefix.
	Prefix string `yaml:"prefix"`
	// DialTimeout bounds the first contact with the cluster in Open: the
	// check that it answers, and authentication. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// RequestTimeout bounds each request to etcd; a call may send several,
	// within its context. A read unanswered in time is sent again, and so
	// is a renewal, finish or release: each is decided afresh from the
	// marker read back, so one that landed is not applied twice. A claim or
	// skip unanswered in time fails with an error wrapping
	// slotstore.ErrOutcomeUnknown. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// LeaseTTL is the TTL of the etcd lease the store holds for its
	// process, in whole seconds, at least one: when the process dies or is
	// cut off from the cluster's quorum for that long, the cluster deletes
	// the holder keys of the slots it held, and replicas waiting for those
	// slots learn of it at once (WatchHolder). It does not shorten or
	// lengthen any slot's lease. Zero means DefaultLeaseTTL.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// MaxTxnOps is the most operations (compares, writes, reads) the store
	// puts in one transaction: the cluster's --max-txn-ops, which is 128
	// unless the cluster was started otherwise. Zero means
	// DefaultMaxTxnOps; at least MinMaxTxnOps.
	MaxTxnOps int `yaml:"max_txn_ops"`
	// ClockSource says what the store's clock is: "etcd" (the default,
	// when empty), the time of the members, read from the Date header of
	// their HTTP answers (package netclock: to a few milliseconds on a
	// local network, carried forward by this process's monotonic clock and
	// measured again every five minutes), so replicas whose own clocks
	// disagree still judge leases and slots by one clock; or "local", this
	// process's wall clock, for members that cannot be reached over HTTP(S)
	// at their client URLs, which then must agree across hosts (NTP).
	ClockSource string `yaml:"clock"`
	// Clock, when set, is the store's clock, whatever ClockSource says.
	// Every process sharing a prefix must use one clock: lease ends written
	// by one process are judged by the clock of another.
	Clock func() time.Time `yaml:"-"`
}

// TLSOptions configures TLS.
type TLSOptions struct {
	// CAFile is a PEM file of the certificate authorities to trust; empty
	// means the system's.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// members that require one (--client-cert-auth). Both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the members' certificates must carry; empty
	// means the host of the endpoint dialled.
	ServerName string `yaml:"server_name"`
}

// set reports whether any TLS setting is given.
func (t TLSOptions) set() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
}

// Validate reports every setting of o that Open would refuse, as
// errors.Join of errors each naming the setting's YAML key ("endpoints:
// ...", "tls.cert_file: ..."). It returns nil when Open can use o. It reads
// no file and contacts no member: a CA file that cannot be read is Open's
// error.
func (o Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, optkey.Errorf(key, format, args...)) }
	schemes := map[string]bool{}
	for i, e := range o.Endpoints {
		scheme, err := endpointScheme(e)
		if err != nil {
			bad("endpoints", "entry %d (%q): %v", i+1, e, err)
			continue
		}
		schemes[scheme] = true
	}
	switch {
	case schemes["http"] && schemes["https"]:
		bad("endpoints", "mixes http:// and https:// endpoints: every member is reached the same way")
	case schemes["http"] && o.TLS.set():
		bad("tls", "settings given but the endpoints are http://: use https:// endpoints for TLS")
	}
	switch {
	case o.TLS.CertFile != "" && o.TLS.KeyFile == "":
		bad("tls.cert_file", "is set but key_file is not: cert_file and key_file go together")
	case o.TLS.KeyFile != "" && o.TLS.CertFile == "":
		bad("tls.key_file", "is set but cert_file is not: cert_file and key_file go together")
	}
	if (o.Username == "") != (o.Password == "") {
		key := "password"
		if o.Username == "" {
			key = "username"
		}
		bad(key, "is empty but the other of username and password is set: they go together")
	}
	if o.Prefix != "" && strings.Trim(o.Prefix, "/") == "" {
		bad("prefix", "%q has no name: the store's keys would mix with the cluster's others", o.Prefix)
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"dial_timeout", o.DialTimeout}, {"request_timeout", o.RequestTimeout}, {"lease_ttl", o.LeaseTTL}} {
		switch {
		case d.d < 0:
			bad(d.key, "must not be negative")
		case d.d > MaxTimeout:
			bad(d.key, "%v is longer than %v (ten years)", d.d, MaxTimeout)
		}
	}
	if o.LeaseTTL > 0 && o.LeaseTTL%time.Second != 0 {
		bad("lease_ttl", "%v is not a whole number of seconds: etcd leases count seconds", o.LeaseTTL)
	}
	switch o.ClockSource {
	case "", ClockEtcd, ClockLocal:
	default:
		bad("clock", "%q: want %s or %s", o.ClockSource, ClockEtcd, ClockLocal)
	}
	if o.MaxTxnOps != 0 && o.MaxTxnOps < MinMaxTxnOps {
		bad("max_txn_ops", "%d is fewer than %d, the operations one claim may need", o.MaxTxnOps, MinMaxTxnOps)
	}
	return errors.Join(errs...)
}

// endpointScheme returns the scheme of an endpoint: http or https. An
// endpoint must be a URL with one of them and a host.
func endpointScheme(e string) (string, error) {
	if e == "" {
		return "", errors.New("empty")
	}
	u, err := url.Parse(e)
	if err != nil || u.Host == "" {
		return "", errors.New("want a URL such as http://host:2379")
	}
	if u.Hostname() == "" {
		return "", errors.New("no host (is its ${VAR} set?)")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil {
		return "", errors.New("credentials in the URL: use username and password")
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return "", errors.New("want no path or query")
	}
	return u.Scheme, nil
}

// withDefaults returns o, which Validate accepted, with every zero setting
// replaced by its default and the prefix ending with "/".
func (o Options) withDefaults() Options {
	if len(o.Endpoints) == 0 {
		o.Endpoints = []string{DefaultEndpoint}
	}
	o.Prefix = normalPrefix(o.Prefix)
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.MaxTxnOps == 0 {
		o.MaxTxnOps = DefaultMaxTxnOps
	}
	if o.ClockSource == "" {
		o.ClockSource = ClockEtcd
	}
	if o.Clock == nil && o.ClockSource == ClockLocal {
		o.Clock = time.Now
	}
	return o
}

// normalPrefix is prefix, DefaultPrefix when empty, ending with "/".
func normalPrefix(prefix string) string {
	if prefix == "" {
		return DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix
}

// tlsConfig builds the client's TLS configuration, or nil without TLS.
func (o Options) tlsConfig() (*tls.Config, error) {
	https := false
	for _, e := range o.Endpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	t := o.TLS
	if !https && !t.set() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: tls: read CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcdstore: tls: %w: no PEM certificate in CA file %s", slotstore.ErrInvalid, t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: tls: load client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
