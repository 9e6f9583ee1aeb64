package scheduler

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// RedisConfig configures the Redis store: standalone (addr), Cluster (addrs)
// or Sentinel (master_name with the sentinels in addrs).
type RedisConfig struct {
	// Addr is one server, host:port.
	Addr string `yaml:"addr"`
	// Addrs are the Cluster nodes, or the sentinels when MasterName is set.
	Addrs []string `yaml:"addrs"`
	// MasterName selects Sentinel mode.
	MasterName string `yaml:"master_name"`
	Username   string `yaml:"username"`
	Password   string `yaml:"password"`
	// DB is the database number (standalone and Sentinel only).
	DB  int       `yaml:"db"`
	TLS TLSConfig `yaml:"tls"`
	// Prefix starts every key. Default: "slotcron:".
	Prefix       string   `yaml:"prefix"`
	DialTimeout  Duration `yaml:"dial_timeout"`
	ReadTimeout  Duration `yaml:"read_timeout"`
	WriteTimeout Duration `yaml:"write_timeout"`
	PoolSize     int      `yaml:"pool_size"`
	// WaitReplicas makes claims, renewals and finishes wait until that many
	// replicas acknowledged them (WAIT); see redisstore.Options. Default 0.
	WaitReplicas int `yaml:"wait_replicas"`
	// WaitTimeout bounds that wait; shorter than read_timeout. Default:
	// 1s, or half of read_timeout if that is shorter.
	WaitTimeout Duration `yaml:"wait_timeout"`
}

// addrs is every configured address, addr first.
func (r RedisConfig) addrs() []string {
	var out []string
	if r.Addr != "" {
		out = append(out, r.Addr)
	}
	return append(out, r.Addrs...)
}

// TLSConfig is written either as a boolean (tls: true) or as a mapping.
type TLSConfig struct {
	// Enabled turns TLS on; a mapping turns it on unless it says
	// enabled: false.
	Enabled bool `yaml:"enabled"`
	// CAFile verifies the server; default: the system's roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile present a client certificate.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked in the server's certificate.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify disables verification. Off by default; never in
	// production.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// UnmarshalYAML accepts tls: true|false or a mapping of TLSConfig's keys.
func (t *TLSConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want true, false or a mapping, not %q", n.Line, n.Value)}}
		}
		*t = TLSConfig{Enabled: b}
		return nil
	}
	type plain TLSConfig
	p := plain{Enabled: true}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*t = TLSConfig(p)
	return nil
}

// PostgresConfig configures the Postgres store.
type PostgresConfig struct {
	// DSN is a libpq connection string or URL; it is never logged.
	DSN string `yaml:"dsn"`
	// Schema holds slotcron's tables. Default: slotcron.
	Schema string `yaml:"schema"`
	// PoolSize bounds the connection pool. Default: pgxpool's.
	PoolSize int `yaml:"pool_size"`
	// StatementTimeout bounds each statement. Default: none.
	StatementTimeout Duration `yaml:"statement_timeout"`
}

// checkStore reports store settings that cannot work.
func (c *Config) checkStore(add func(*ConfigError)) {
	switch c.Store.Kind {
	case "", "sqlite", "memory":
	case "redis":
		r := c.Store.Redis
		if len(r.addrs()) == 0 {
			add(c.errAt("store.kind is redis but no redis addr or addrs is set", "store", "redis"))
		}
		if r.DB != 0 && len(r.addrs()) > 1 && r.MasterName == "" {
			add(c.errAt("db must be 0 in Cluster mode (several addrs without master_name)", "store", "redis", "db"))
		}
		if t := r.TLS; !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify) {
			add(c.errAt("tls settings are given but tls is off (enabled: false)", "store", "redis", "tls"))
		}
		if (r.TLS.CertFile == "") != (r.TLS.KeyFile == "") {
			add(c.errAt("cert_file and key_file go together", "store", "redis", "tls"))
		}
		if r.PoolSize < 0 {
			add(c.errAt("pool_size must not be negative", "store", "redis", "pool_size"))
		}
		if r.WaitReplicas < 0 {
			add(c.errAt("wait_replicas must not be negative", "store", "redis", "wait_replicas"))
		}
		if r.WaitTimeout != 0 && r.WaitReplicas == 0 {
			add(c.errAt("wait_timeout is set but wait_replicas is 0", "store", "redis", "wait_timeout"))
		}
		c.checkMax("dial_timeout", r.DialTimeout, add, "store", "redis", "dial_timeout")
		c.checkMax("read_timeout", r.ReadTimeout, add, "store", "redis", "read_timeout")
		c.checkMax("write_timeout", r.WriteTimeout, add, "store", "redis", "write_timeout")
		c.checkMax("wait_timeout", r.WaitTimeout, add, "store", "redis", "wait_timeout")
	case "postgres":
		if c.Store.Postgres.DSN == "" {
			add(c.errAt("store.kind is postgres but store.postgres.dsn is empty (is its ${VAR} set?)", "store", "postgres", "dsn"))
		}
		if c.Store.Postgres.PoolSize < 0 {
			add(c.errAt("pool_size must not be negative", "store", "postgres", "pool_size"))
		}
		c.checkMax("statement_timeout", c.Store.Postgres.StatementTimeout, add, "store", "postgres", "statement_timeout")
	default:
		add(c.errAt(fmt.Sprintf("unknown store kind %q (sqlite, memory, redis or postgres)", c.Store.Kind), "store", "kind"))
	}
}
