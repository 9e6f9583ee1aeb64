package scheduler

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/scheduler/internal/backend"
)

// entriesPerDecode is how many entries of a big mapping go to go-yaml at a
// time (see decodeConfig).
const entriesPerDecode = 128

// decodeConfig decodes the document top into cfg and returns go-yaml's type
// errors ("line N: message"), or an error for a document go-yaml could not
// decode at all.
//
// go-yaml checks a mapping for duplicate keys by comparing every key with
// every other: quadratic, 23 s for 64k jobs, and no end in sight for a
// million. So the jobs and duties mappings, the ones that grow with a
// deployment, are set aside while the rest is decoded, checked for
// duplicates here with a set, and handed to go-yaml a slice of entries at a
// time. The result, errors included, is what go-yaml gives for the whole
// document: a mapping with a duplicate key is reported pair by pair in
// go-yaml's words and left undecoded, and a mapping this cannot slice (one
// with a merge key "<<", or at a top level with a duplicate or merge key)
// is left to go-yaml whole.
func decodeConfig(top *yaml.Node, cfg *Config) ([]string, error) {
	type aside struct {
		i    int        // index of the value in top.Content
		node *yaml.Node // the mapping set aside
		out  any        // pointer to the map it decodes into
	}
	var set []aside
	if top.Kind == yaml.MappingNode && len(duplicateKeys(top)) == 0 && !hasMergeKey(top) {
		for i := 0; i+1 < len(top.Content); i += 2 {
			v := top.Content[i+1]
			if v.Kind != yaml.MappingNode || hasMergeKey(v) {
				continue
			}
			switch top.Content[i].Value {
			case "jobs":
				set = append(set, aside{i + 1, v, &cfg.Jobs})
			case "duties":
				set = append(set, aside{i + 1, v, &cfg.Duties})
			}
		}
	}
	for _, a := range set {
		// An empty mapping in its place: the map is made, nothing decoded.
		top.Content[a.i] = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: a.node.Line, Column: a.node.Column}
	}
	durs, restore := storeDurations(top)
	err := top.Decode(cfg)
	restore()
	for _, a := range set {
		top.Content[a.i] = a.node
	}
	msgs, err := typeErrors(err)
	if err != nil {
		return nil, err
	}
	msgs = append(durs, msgs...)
	for _, a := range set {
		more, err := decodeEntries(a.node, a.out)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, more...)
	}
	return msgs, nil
}

// decodeEntries decodes mapping n into the map out points to, which exists.
func decodeEntries(n *yaml.Node, out any) ([]string, error) {
	if dups := duplicateKeys(n); len(dups) > 0 {
		reflect.ValueOf(out).Elem().SetZero() // as go-yaml: not decoded at all
		return dups, nil
	}
	var msgs []string
	for off := 0; off < len(n.Content); off += 2 * entriesPerDecode {
		part := *n
		part.Content = n.Content[off:min(off+2*entriesPerDecode, len(n.Content))]
		more, err := typeErrors(part.Decode(out))
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, more...)
	}
	return msgs, nil
}

// typeErrors splits err into go-yaml's type errors, after which decoding
// went on, and any other error.
func typeErrors(err error) ([]string, error) {
	var te *yaml.TypeError
	if err == nil || !errors.As(err, &te) {
		return nil, err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = plainTypeError(m)
	}
	return msgs, nil
}

// duplicateKeys reports every pair of equal keys of mapping n as go-yaml
// does, in its order and words, in time linear in the keys.
func duplicateKeys(n *yaml.Node) []string {
	type key struct {
		kind  yaml.Kind
		value string
	}
	at := map[key][]*yaml.Node{} // each key's nodes, in document order
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		at[key{k.Kind, k.Value}] = append(at[key{k.Kind, k.Value}], k)
	}
	if len(at) == len(n.Content)/2 {
		return nil
	}
	var msgs []string
	seen := map[key]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := key{n.Content[i].Kind, n.Content[i].Value}
		nodes := at[k]
		first := nodes[seen[k]]
		seen[k]++
		for _, later := range nodes[seen[k]:] {
			msgs = append(msgs, fmt.Sprintf("line %d: mapping key %#v already defined at line %d", later.Line, later.Value, first.Line))
		}
	}
	return msgs
}

// hasMergeKey reports whether mapping n merges another in ("<<"), as
// go-yaml recognises one.
func hasMergeKey(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge") {
			return true
		}
	}
	return false
}

// checkKeys reports every mapping key that t has no field for, with its
// dotted path, walking structs, maps and inlined structs.
func checkKeys(src *source, n *yaml.Node, t reflect.Type, path string, errs *ConfigErrors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice {
		for i, item := range n.Content {
			checkKeys(src, item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
		return
	}
	if n.Kind != yaml.MappingNode || t == reflect.TypeOf(yaml.Node{}) {
		return
	}
	switch t.Kind() {
	case reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(src, n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	case reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Value == "<<" {
				continue
			}
			ft, ok := fields[k.Value]
			if !ok && t == reflect.TypeFor[StoreConfig]() && backend.ImportFor(k.Value) != "" {
				continue // the block of a store kind not linked: not read
			}
			if !ok {
				*errs = append(*errs, &ConfigError{File: src.file, Line: k.Line, Key: join(path, k.Value), Msg: "unknown key" + suggest(k.Value, fields)})
				continue
			}
			if v := n.Content[i+1]; truncatedFloat(v, ft) {
				*errs = append(*errs, &ConfigError{File: src.file, Line: v.Line, Key: join(path, k.Value),
					Msg: fmt.Sprintf("want a whole number, not %q", v.Value)})
			}
			checkKeys(src, n.Content[i+1], ft, join(path, k.Value), errs)
		}
	}
}

// fieldsOf caches yamlFields: checkKeys asks for the same few structs once
// per job.
var fieldsOf sync.Map // reflect.Type → map[string]reflect.Type

// yamlFields maps each YAML key of struct t, inlined fields included, to its
// field type. The map is shared: read it only.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	if t == reflect.TypeFor[StoreConfig]() {
		return storeFields() // not cached: a kind may be registered later
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	fieldsOf.Store(t, out)
	return out
}

func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for name := range fields {
		if d := editDistance(key, name); d < bestD || (d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// truncatedFloat reports whether n is a number with a fraction (or an
// infinity) that go-yaml would cut to a whole one, without a word, to
// decode it into t, an integer type or a pointer to one.
func truncatedFloat(n *yaml.Node, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind != yaml.ScalarNode || !isInt(t) || n.ShortTag() != "!!float" {
		return false
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return false // a duration, say: it reads numbers its own way
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || f > math.MaxInt64 {
		return false // go-yaml refuses it itself
	}
	return math.IsInf(f, 0) || f != math.Trunc(f)
}

// typedEntry is a key or value of the document with the type it decodes
// into: a value under its key's dotted path, a key (isKey) under its
// mapping's.
type typedEntry struct {
	path  string
	node  *yaml.Node
	typ   reflect.Type
	isKey bool
}

// entriesAt returns the entries of the document on line, indexing them all
// at the first call.
func (s *source) entriesAt(line int) []typedEntry {
	if s == nil || line <= 0 || len(s.root.Content) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.typed == nil {
		s.typed = map[int][]typedEntry{}
		indexTyped(s.root.Content[0], reflect.TypeFor[Config](), "", s.typed)
	}
	return s.typed[line]
}

// indexTyped records n, and what under it decodes into t's fields,
// elements and keys, by line. Aliases are not followed: go-yaml reports an
// error in an anchored value at the anchor.
func indexTyped(n *yaml.Node, t reflect.Type, path string, out map[int][]typedEntry) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out[n.Line] = append(out[n.Line], typedEntry{path: path, node: n, typ: t})
	if t == reflect.TypeFor[yaml.Node]() {
		return
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			out[k.Line] = append(out[k.Line], typedEntry{path: path, node: k, typ: t.Key(), isKey: true})
			indexTyped(n.Content[i+1], t.Elem(), join(path, k.Value), out)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			out[k.Line] = append(out[k.Line], typedEntry{path: path, node: k, typ: reflect.TypeFor[string](), isKey: true})
			if ft, ok := fields[k.Value]; ok {
				indexTyped(n.Content[i+1], ft, join(path, k.Value), out)
			}
		}
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, c := range n.Content {
			indexTyped(c, t.Elem(), path, out)
		}
	}
}

// entryOfKind finds the one entry on line that go-yaml's "cannot unmarshal
// tag into goType" is about: a list, a mapping or a scalar as tag says,
// decoded into the type named goType.
func (s *source) entryOfKind(line int, tag, goType string) (typedEntry, bool) {
	kind := yaml.ScalarNode
	switch tag {
	case "!!seq":
		kind = yaml.SequenceNode
	case "!!map":
		kind = yaml.MappingNode
	}
	var found typedEntry
	n := 0
	for _, e := range s.entriesAt(line) {
		name := e.typ.String()
		if e.typ == reflect.TypeFor[time.Duration]() {
			name = reflect.TypeFor[Duration]().String() // read as a Duration
		}
		if e.node.Kind != kind || (name != goType && e.typ.String() != goType) {
			continue
		}
		if n == 0 || found.path != e.path || found.isKey != e.isKey {
			n++
		}
		found = e
	}
	return found, n == 1
}

// onlyEntry returns the entry of line when all its entries are of one key
// (block style), preferring the value to the key.
func (s *source) onlyEntry(line int) (typedEntry, bool) {
	var entries []typedEntry
	for _, e := range s.entriesAt(line) {
		// A block list or mapping begins on the line of its first entry,
		// which is the line's own.
		if e.isKey || e.node.Kind == yaml.ScalarNode || e.node.Style&yaml.FlowStyle != 0 {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return typedEntry{}, false
	}
	best := entries[0]
	for _, e := range entries[1:] {
		if e.full() != best.full() {
			return typedEntry{}, false
		}
		if best.isKey {
			best = e
		}
	}
	if best.isKey {
		best.path, best.isKey = best.full(), false
	}
	return best, true
}

// full is the dotted path of e's key: a key's own, under its mapping's.
func (e typedEntry) full() string {
	if e.isKey {
		return join(e.path, e.node.Value)
	}
	return e.path
}

// keyNamed returns the dotted path of the key named key on line.
func (s *source) keyNamed(line int, key string) string {
	for _, e := range s.entriesAt(line) {
		if e.isKey && e.node.Value == key {
			return join(e.path, key)
		}
	}
	return key
}
