package scheduler

import (
	"fmt"
	"regexp"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
)

// backendConfig is the store block as the backend opens it.
func (cfg *Config) backendConfig() backend.Config {
	c := cfg.Store
	return backend.Config{Kind: c.Kind, SQLite: c.SQLite, Redis: c.Redis, Postgres: c.Postgres}
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
	case "postgres":
		block, err = "postgres", c.Store.Postgres.Validate()
		if c.Store.Postgres.DSN == "" {
			err = nil // said below, with a hint
			add(c.errAt("store.kind is postgres but store.postgres.dsn is empty (is its ${VAR} set?)", "store", "postgres", "dsn"))
		}
	default:
		add(c.errAt(fmt.Sprintf("unknown store kind %q (sqlite, memory, redis or postgres)", c.Store.Kind), "store", "kind"))
		return
	}
	for _, e := range optkey.All(err) {
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
