package pgstore_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestValidate: each refused setting is named by its YAML key, every
// problem is reported, and no message shows the DSN.
func TestValidate(t *testing.T) {
	const dsn = "postgres://app:pa55-w0rd@db:5432/app"
	for _, c := range []struct {
		name string
		o    pgstore.Options
		keys []string // nil: valid
	}{
		{"DSN alone", pgstore.Options{DSN: dsn}, nil},
		{"everything", pgstore.Options{DSN: dsn, Schema: "jobs", PoolSize: 8, StatementTimeout: 5 * time.Second}, nil},
		{"longest timeout", pgstore.Options{DSN: dsn, StatementTimeout: pgstore.MaxStatementTimeout}, nil},
		{"longest schema", pgstore.Options{DSN: dsn, Schema: strings.Repeat("s", 63)}, nil},

		{"no DSN", pgstore.Options{}, []string{"dsn"}},
		{"long schema", pgstore.Options{DSN: dsn, Schema: strings.Repeat("s", 64)}, []string{"schema"}},
		{"NUL in schema", pgstore.Options{DSN: dsn, Schema: "a\x00b"}, []string{"schema"}},
		{"negative pool size", pgstore.Options{DSN: dsn, PoolSize: -1}, []string{"pool_size"}},
		{"negative timeout", pgstore.Options{DSN: dsn, StatementTimeout: -time.Second}, []string{"statement_timeout"}},
		{"long timeout", pgstore.Options{DSN: dsn, StatementTimeout: pgstore.MaxStatementTimeout + time.Millisecond}, []string{"statement_timeout"}},
		{"every problem", pgstore.Options{Schema: strings.Repeat("s", 64), PoolSize: -1, StatementTimeout: -1},
			[]string{"dsn", "pool_size", "schema", "statement_timeout"}},
	} {
		err := c.o.Validate()
		var keys []string
		for _, e := range optkey.All(err) {
			keys = append(keys, strings.Join(e.Key, "."))
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, c.keys) {
			t.Errorf("%s: keys %q (%v), want %q", c.name, keys, err, c.keys)
		}
		if err != nil && strings.Contains(err.Error(), "pa55-w0rd") {
			t.Errorf("%s: %q shows the password", c.name, err)
		}
	}
}

// TestOptionsYAML: the store.postgres block of a configuration decodes into
// Options key for key, and encodes back to the same Options.
func TestOptionsYAML(t *testing.T) {
	const block = `
dsn: postgres://app@db:5432/app?sslmode=verify-full
schema: jobs
pool_size: 8
statement_timeout: 5s
`
	want := pgstore.Options{DSN: "postgres://app@db:5432/app?sslmode=verify-full", Schema: "jobs", PoolSize: 8,
		StatementTimeout: 5 * time.Second}
	got := decodeOptions(t, block)
	if got != want {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	out, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if again := decodeOptions(t, string(out)); again != want {
		t.Errorf("encoded as\n%s\ndecoded again as %+v", out, again)
	}
	err = yaml.Unmarshal([]byte("dsn: x\nstatement_timeout: 5 seconds"), new(pgstore.Options))
	if err == nil || !strings.Contains(err.Error(), "line 2: cannot unmarshal !!str `5 seconds` into time.Duration") {
		t.Errorf("a bad duration: %v, want go-yaml's error naming line 2", err)
	}
}

func decodeOptions(t *testing.T, doc string) pgstore.Options {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var o pgstore.Options
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("decode:\n%s\n%v", doc, err)
	}
	return o
}
