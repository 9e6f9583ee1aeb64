package sqlitestore_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// TestValidate: each refused setting is named by its YAML key.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		o    sqlitestore.Options
		keys []string // nil: valid
	}{
		{"zero value", sqlitestore.Options{}, nil},
		{"path and timeout", sqlitestore.Options{Path: "/var/lib/slotcron/slots.db", BusyTimeout: time.Second}, nil},
		{"longest timeout", sqlitestore.Options{BusyTimeout: sqlitestore.MaxBusyTimeout}, nil},

		{"in memory", sqlitestore.Options{Path: ":memory:"}, []string{"path"}},
		{"URI", sqlitestore.Options{Path: "file:x.db"}, []string{"path"}},
		{"query", sqlitestore.Options{Path: "x.db?mode=ro"}, []string{"path"}},
		{"negative timeout", sqlitestore.Options{BusyTimeout: -time.Second}, []string{"busy_timeout"}},
		{"long timeout", sqlitestore.Options{BusyTimeout: sqlitestore.MaxBusyTimeout + time.Millisecond}, []string{"busy_timeout"}},
		{"both", sqlitestore.Options{Path: ":memory:", BusyTimeout: -1}, []string{"path", "busy_timeout"}},
	} {
		err := c.o.Validate()
		var keys []string
		for _, e := range optkey.All(err) {
			keys = append(keys, strings.Join(e.Key, "."))
		}
		if !reflect.DeepEqual(keys, c.keys) {
			t.Errorf("%s: keys %q (%v), want %q", c.name, keys, err, c.keys)
		}
		if c.keys != nil {
			if s, err := sqlitestore.Open(t.Context(), c.o); !errors.Is(err, slotstore.ErrInvalid) {
				if s != nil {
					s.Close()
				}
				t.Errorf("%s: Open: %v, want ErrInvalid", c.name, err)
			}
		}
	}
}

// TestDefaultPath: the zero Options open DefaultPath in the working
// directory.
func TestDefaultPath(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := sqlitestore.Open(t.Context(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(sqlitestore.DefaultPath); err != nil {
		t.Errorf("the zero Options opened no %s: %v", sqlitestore.DefaultPath, err)
	}
}

// TestOptionsYAML: the store.sqlite block of a configuration decodes into
// Options key for key; the clock is no key.
func TestOptionsYAML(t *testing.T) {
	dec := yaml.NewDecoder(strings.NewReader("path: /var/lib/slotcron/slots.db\nbusy_timeout: 30s\n"))
	dec.KnownFields(true)
	var o sqlitestore.Options
	if err := dec.Decode(&o); err != nil {
		t.Fatal(err)
	}
	if o.Path != "/var/lib/slotcron/slots.db" || o.BusyTimeout != 30*time.Second || o.Clock != nil {
		t.Errorf("decoded %+v", o)
	}
	out, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "path: /var/lib/slotcron/slots.db\nbusy_timeout: 30s\n" {
		t.Errorf("encoded as %q", out)
	}
	dec = yaml.NewDecoder(strings.NewReader("clock: now\n"))
	dec.KnownFields(true)
	if err := dec.Decode(new(sqlitestore.Options)); err == nil {
		t.Error("decoded a clock")
	}
}
