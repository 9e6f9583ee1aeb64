package scheduler

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
)

// backendConfig is the store block as the backend opens it.
func (cfg *Config) backendConfig() backend.Config {
	return backend.Config{Kind: cfg.Store.Kind, Options: cfg.Store.Options}
}

// checkStore reports the store settings the chosen kind refuses, each at
// its key: the kind's check (its backend's Options.Validate) holds the
// rules. A kind the binary does not link is an error at store.kind.
func (c *Config) checkStore(add func(*ConfigError)) {
	k, ok := backend.Lookup(c.Store.Kind)
	if !ok {
		add(c.errAt(unlinkedKind(c.Store.Kind), "store", "kind"))
		return
	}
	opts, err := k.Value(c.Store.Options)
	if err != nil {
		add(c.errAt(err.Error(), "store", "kind"))
		return
	}
	if k.Check == nil {
		return
	}
	for _, e := range optkey.All(k.Check(opts)) {
		add(c.errAt(e.Msg, append([]string{"store", k.Name}, e.Key...)...))
	}
}

// unlinkedKind says that kind is no kind this binary links, and which
// import links it when slotcron ships it.
func unlinkedKind(kind string) string {
	if imp := backend.ImportFor(kind); imp != "" {
		return fmt.Sprintf("store kind %q is not linked into this binary: import _ %q", kind, imp)
	}
	var names []string
	for _, k := range backend.Kinds() {
		names = append(names, k.Name)
	}
	list := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	return fmt.Sprintf("unknown store kind %q (%s)", kind, list)
}

// checkStoreAgainstLease has the chosen kind check its settings against the
// shortest lease of the jobs and duties (etcd's request timeout must fit
// it).
func (c *Config) checkStoreAgainstLease(shortest time.Duration, holder string, add func(*ConfigError)) {
	k, ok := backend.Lookup(c.Store.Kind)
	if !ok || k.CheckLease == nil || shortest <= 0 {
		return
	}
	opts, err := k.Value(c.Store.Options)
	if err != nil {
		return // checkStore said so
	}
	for _, e := range optkey.All(k.CheckLease(opts, shortest, holder)) {
		add(c.errAt(e.Msg, append([]string{"store", k.Name}, e.Key...)...))
	}
}

// UnmarshalYAML reads store.kind, and decodes the block of each kind the
// binary links into its backend's Options, keeping the chosen kind's in
// Options; blocks of kinds it does not link are not read.
func (s *StoreConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{notStoreConfig(n)}}
	}
	var blocks map[string]yaml.Node
	if err := n.Decode(&blocks); err != nil {
		return err
	}
	var msgs []string
	collect := func(err error) error {
		if te, ok := err.(*yaml.TypeError); ok {
			msgs = append(msgs, te.Errors...)
			return nil
		}
		return err
	}
	if b, ok := blocks["kind"]; ok {
		if err := collect(b.Decode(&s.Kind)); err != nil {
			return err
		}
	}
	chosen := backend.KindName(s.Kind)
	s.Options = nil
	for _, name := range slices.Sorted(maps.Keys(blocks)) {
		k, ok := backend.Lookup(name)
		if name == "kind" || name == "" || !ok || k.Options == nil {
			continue
		}
		b := blocks[name]
		v := reflect.New(k.Options)
		if err := collect(b.Decode(v.Interface())); err != nil {
			return err
		}
		if name == chosen {
			s.Options = v.Elem().Interface()
		}
	}
	if len(msgs) > 0 {
		return &yaml.TypeError{Errors: msgs}
	}
	return nil
}

// MarshalYAML writes store.kind and the chosen kind's block, so that a
// Config written out (the effective configuration, say) reads back the same.
func (s StoreConfig) MarshalYAML() (any, error) {
	out := map[string]any{"kind": s.Kind}
	if s.Options != nil {
		out[backend.KindName(s.Kind)] = s.Options
	}
	return out, nil
}

// notStoreConfig is go-yaml's error for n, no mapping, decoded into a
// StoreConfig.
func notStoreConfig(n *yaml.Node) string {
	tag, value := n.ShortTag(), ""
	if tag != "!!seq" && tag != "!!map" {
		value = n.Value
		if len(value) > 10 {
			value = value[:7] + "..."
		}
		value = " `" + value + "`"
	}
	return fmt.Sprintf("line %d: cannot unmarshal %s%s into %v", n.Line, tag, value, reflect.TypeFor[StoreConfig]())
}

// storeFields maps the keys of the store block to their types: kind, and
// the block of each linked kind that reads one.
func storeFields() map[string]reflect.Type {
	out := map[string]reflect.Type{"kind": reflect.TypeFor[string]()}
	for _, k := range backend.Kinds() {
		if k.Options != nil {
			out[k.Name] = k.Options
		}
	}
	return out
}

// yamlDuration is go-yaml's error for a value that is no time.Duration.
var yamlDuration = regexp.MustCompile("^(line [0-9]+): cannot unmarshal !![a-z]+ (`.*`) into time.Duration$")

// plainTypeError words go-yaml's errors about the backends' durations as
// Duration's own, without Go's type names.
func plainTypeError(msg string) string {
	return yamlDuration.ReplaceAllString(msg, "$1: invalid duration $2 (use a number with a unit: 500ms, 15s, 10m, 168h)")
}

// storeDurationKeys are, per block of a linked store kind, the keys whose
// Options field is a time.Duration. Not cached: a kind may be registered
// after a first configuration was read.
func storeDurationKeys() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for block, t := range storeFields() {
		if t.Kind() == reflect.Struct {
			out[block] = durationKeys(t)
		}
	}
	return out
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
	for block, keys := range storeDurationKeys() {
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
