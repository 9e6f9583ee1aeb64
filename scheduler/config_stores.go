package scheduler

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// backendConfig is the store block as the backend opens it.
func (cfg *Config) backendConfig() backend.Config {
	c := cfg.Store
	return backend.Config{Kind: c.Kind, SQLite: c.SQLite, Redis: c.Redis, Postgres: c.Postgres, Etcd: c.Etcd}
}

// checkStore reports the store settings the backend of the chosen kind
// refuses, each at its key: the backend's Options.Validate holds the rules.
func (c *Config) checkStore(add func(*ConfigError)) {
	var block string
	var err error
	switch c.Store.Kind {
	case "memory":
		return
	case "", "sqlite":
		block, err = "sqlite", c.Store.SQLite.Validate()
	case "redis":
		block, err = "redis", c.Store.Redis.Validate()
		// In Go the zero Options mean a local server; a file that chose
		// redis and names none most likely left a ${VAR} unset.
		if r := c.Store.Redis; r.Addr == "" && len(r.Addrs) == 0 {
			add(c.errAt("store.kind is redis but no redis addr or addrs is set (is its ${VAR} set?)", "store", "redis"))
		}
	case "postgres":
		block, err = "postgres", c.Store.Postgres.Validate()
		if c.Store.Postgres.DSN == "" {
			add(c.errAt("store.kind is postgres but store.postgres.dsn is empty (is its ${VAR} set?)", "store", "postgres", "dsn"))
		}
	case "etcd":
		block, err = "etcd", c.Store.Etcd.Validate()
		// In Go no endpoints mean a local member; a file that chose etcd
		// and lists none most likely left a ${VAR} unset.
		if len(c.Store.Etcd.Endpoints) == 0 {
			add(c.errAt("store.kind is etcd but store.etcd.endpoints is empty (is its ${VAR} set?)", "store", "etcd"))
		}
	default:
		add(c.errAt(fmt.Sprintf("unknown store kind %q (sqlite, memory, redis, postgres or etcd)", c.Store.Kind), "store", "kind"))
		return
	}
	for _, e := range optkey.All(err) {
		if block == "postgres" && c.Store.Postgres.DSN == "" && slices.Equal(e.Key, []string{"dsn"}) {
			continue // said above, with a hint
		}
		add(c.errAt(e.Msg, append([]string{"store", block}, e.Key...)...))
	}
}

// yamlDuration is go-yaml's error for a value that is no time.Duration.
var yamlDuration = regexp.MustCompile("^(line [0-9]+): cannot unmarshal !![a-z]+ (`.*`) into time.Duration$")

// plainTypeError words go-yaml's errors about the backends' durations as
// Duration's own, without Go's type names.
func plainTypeError(msg string) string {
	return yamlDuration.ReplaceAllString(msg, "$1: invalid duration $2 (use a number with a unit: 500ms, 15s, 10m, 168h)")
}

// storeDurationKeys are, per store block, the keys whose Options field is a
// time.Duration.
var storeDurationKeys = map[string]map[string]bool{
	"sqlite":   durationKeys(reflect.TypeFor[sqlitestore.Options]()),
	"redis":    durationKeys(reflect.TypeFor[redisstore.Options]()),
	"postgres": durationKeys(reflect.TypeFor[pgstore.Options]()),
	"etcd":     durationKeys(reflect.TypeFor[etcdstore.Options]()),
}

func durationKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type == reflect.TypeFor[time.Duration]() && name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

// storeDurations reads the durations of the store blocks under top as every
// other duration of the file is read (Duration: "0" is zero, "15s", errors
// worded alike), and leaves each in a form go-yaml decodes into a
// time.Duration until restore puts the file back as it was written (where
// errors are placed by the values they quote). It returns the errors,
// which go on like go-yaml's type errors.
func storeDurations(top *yaml.Node) (msgs []string, restore func()) {
	type save struct {
		n   *yaml.Node
		was yaml.Node
	}
	var saved []save
	restore = func() {
		for _, sv := range saved {
			*sv.n = sv.was
		}
	}
	store := mappingValue(top, "store")
	for block, keys := range storeDurationKeys {
		b := mappingValue(store, block)
		if b == nil {
			continue
		}
		for i := 0; i+1 < len(b.Content); i += 2 {
			if !keys[b.Content[i].Value] {
				continue
			}
			v := b.Content[i+1]
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			var d Duration
			err := d.UnmarshalYAML(v)
			if m, _ := typeErrors(err); len(m) > 0 {
				msgs = append(msgs, m...)
			}
			saved = append(saved, save{v, *v})
			*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.String(), Line: v.Line, Column: v.Column}
		}
	}
	return msgs, restore
}

// mappingValue is the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}
