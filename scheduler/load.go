package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/jobs"
)

// Load reads a YAML configuration file, expands ${VAR} and ${VAR:-default}
// from the environment, and decodes it. Unknown keys and values of the wrong
// type are reported together, each with file, line and key, as ConfigErrors.
// Load does not check what needs the job registry; New and Validate do.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	return Parse(path, data)
}

// Parse is Load for a document already in memory; name is used in errors.
func Parse(name string, data []byte) (*Config, error) {
	cfg, errs := parse(name, data)
	if len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// LoadAndValidate loads the file and validates it against reg, reporting the
// problems of both steps together: what `scheduler validate` prints.
func LoadAndValidate(path string, reg *jobs.Registry) (*Config, error) {
	return loadAndValidate(context.Background(), path, reg)
}

// loadAndValidate is LoadAndValidate, given up with ctx's error when ctx
// ends between its steps or between jobs.
func loadAndValidate(ctx context.Context, path string, reg *jobs.Registry) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, errs := parse(path, data)
	if cfg != nil {
		_, _, err := cfg.resolveContext(ctx, reg)
		var verrs ConfigErrors
		switch {
		case errors.As(err, &verrs):
			errs = append(errs, verrs...)
		case err != nil:
			return nil, err
		}
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return cfg, nil
}

// parse decodes what it can and returns every problem found; cfg is nil
// only when the document could not be read as YAML at all.
func parse(name string, data []byte) (*Config, ConfigErrors) {
	data, values := expandEnv(data)
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, ConfigErrors{syntaxError(name, err)}
	}
	fillEnv(&root, values)
	src := &source{file: name, root: &root}
	cfg := &Config{src: src}
	if len(root.Content) == 0 {
		return cfg, nil
	}
	var errs ConfigErrors
	checkKeys(src, root.Content[0], reflect.TypeOf(Config{}), "", &errs)
	msgs, err := decodeConfig(root.Content[0], cfg)
	if err != nil {
		return nil, ConfigErrors{syntaxError(name, err)}
	}
	for _, msg := range msgs {
		e := typeError(name, msg)
		e.Key = src.keyAt(e.Line, e.Msg)
		errs = append(errs, e)
	}
	sortErrors(errs)
	return cfg, errs
}

// envRef matches what expandEnv replaces: $${, a reference, or the start
// of a placeholder written in the document itself. A default ends at its
// line: one spanning lines (YAML's line breaks, NEL, LS and PS included)
// would take them out of the document with it and move every later line.
var envRef = regexp.MustCompile(`\$\$\{|` + placeholderStem +
	`|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}\r\n\x{85}\x{2028}\x{2029}]*))?\}`)

// placeholder stands for the i-th ${...} while the document is parsed: a
// plain word, valid in any YAML context, on the same line as the reference.
func placeholder(i int) string { return fmt.Sprintf("%s%d__", placeholderStem, i) }

const placeholderStem = "__slotcron_env_"

var placeholderRE = regexp.MustCompile(placeholderStem + `\d+__`)

// expandEnv replaces ${VAR} and ${VAR:-default}: an unset or empty VAR
// without a default becomes empty, and $${ stands for a literal ${. Nothing
// else containing $ is touched, so passwords and specs keep their dollar
// signs. The references are swapped for placeholders before parsing and the
// values put into the parsed scalars afterwards, so a value can never change
// the document's structure or its line numbers (a value with '#', ': ' or a
// newline stays one value), and ${VAR} works unquoted even in flow mappings.
// A plain (unquoted) scalar is typed again after expansion, so
// db: ${REDIS_DB} decodes as a number.
//
// Text of the document that starts like a placeholder is swapped for one
// too, whose value is that text: fillEnv would otherwise take a word such
// as __slotcron_env_0__ for the first reference's placeholder. Equal
// matches share a placeholder, so an anchor and its alias stay equal.
func expandEnv(data []byte) ([]byte, map[string]string) {
	values := map[string]string{}
	seen := map[string]string{} // match → its placeholder
	out := envRef.ReplaceAllFunc(data, func(m []byte) []byte {
		if ph, ok := seen[string(m)]; ok {
			return []byte(ph)
		}
		v := string(m)
		switch v {
		case "$${":
			v = "${"
		case placeholderStem: // stands for itself
		default:
			sub := envRef.FindSubmatch(m)
			if env, ok := os.LookupEnv(string(sub[1])); ok && env != "" {
				v = env
			} else {
				v = string(sub[3])
			}
		}
		ph := placeholder(len(values))
		values[ph] = v
		seen[string(m)] = ph
		return []byte(ph)
	})
	return out, values
}

// fillEnv puts the values of expandEnv into the parsed document.
func fillEnv(n *yaml.Node, values map[string]string) {
	if len(values) == 0 {
		return
	}
	if n.Kind == yaml.ScalarNode && placeholderRE.MatchString(n.Value) {
		n.Value = placeholderRE.ReplaceAllStringFunc(n.Value, func(ph string) string { return values[ph] })
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			n.Tag = ""
		}
	}
	for _, c := range n.Content {
		fillEnv(c, values)
	}
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

func syntaxError(file string, err error) *ConfigError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ConfigError{File: file, Line: n, Msg: m[2]}
	}
	return &ConfigError{File: file, Msg: msg}
}

func typeError(file, msg string) *ConfigError {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ConfigError{File: file, Line: n, Msg: m[2]}
	}
	return &ConfigError{File: file, Msg: msg}
}

func sortErrors(errs ConfigErrors) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
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
			if !ok {
				*errs = append(*errs, &ConfigError{File: src.file, Line: k.Line, Key: join(path, k.Value), Msg: "unknown key" + suggest(k.Value, fields)})
				continue
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

// source remembers the parsed document so validation can name lines.
type source struct {
	file string
	root *yaml.Node

	mu sync.Mutex
	// keys indexes the big mappings line has searched: key → the index in
	// Content of its first occurrence. Without it, an error for each of n
	// jobs costs n²/2 key comparisons.
	keys map[*yaml.Node]map[string]int
	// scalars indexes the document's scalar values by line, for keyAt.
	scalars map[int][]scalarAt
}

// indexFrom is the size from which line indexes a mapping's keys.
const indexFrom = 16

// line returns the line of the deepest key of path present in the document
// (the key's own line), or 0.
func (s *source) line(path ...string) int {
	if s == nil || len(s.root.Content) == 0 {
		return 0
	}
	n, line := s.root.Content[0], 0
	for _, key := range path {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		i, found := s.find(n, key)
		if !found {
			return line
		}
		line, n = n.Content[i].Line, n.Content[i+1]
	}
	return line
}

// find returns the index in mapping n's Content of its first key named key.
func (s *source) find(n *yaml.Node, key string) (int, bool) {
	if len(n.Content) < 2*indexFrom {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return i, true
			}
		}
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, ok := s.keys[n]
	if !ok {
		idx = make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if _, dup := idx[n.Content[i].Value]; !dup {
				idx[n.Content[i].Value] = i
			}
		}
		if s.keys == nil {
			s.keys = map[*yaml.Node]map[string]int{}
		}
		s.keys[n] = idx
	}
	i, found := idx[key]
	return i, found
}

// scalarAt is a mapping entry with a scalar value, for keyAt.
type scalarAt struct {
	key   string // dotted path
	value string
}

// keyAt names the key of a type error: go-yaml says only the line, and the
// message quotes the offending value (`value`, or "value" from Duration's
// and redisstore.TLSOptions' own errors). It is the one entry on that line
// whose scalar value the message quotes; "" if none or several are.
func (s *source) keyAt(line int, msg string) string {
	if s == nil || line <= 0 || len(s.root.Content) == 0 || strings.HasPrefix(msg, "mapping key ") {
		return ""
	}
	s.mu.Lock()
	if s.scalars == nil {
		s.scalars = map[int][]scalarAt{}
		indexScalars(s.root.Content[0], "", s.scalars)
	}
	entries := s.scalars[line]
	s.mu.Unlock()
	key := ""
	for _, e := range entries {
		short := e.value
		if len(short) > 10 {
			short = short[:7] + "..."
		}
		if strings.Contains(msg, strconv.Quote(e.value)) || strings.Contains(msg, "`"+short+"`") {
			if key != "" && key != e.key {
				return ""
			}
			key = e.key
		}
	}
	return key
}

// indexScalars records, by line, every mapping entry under n whose value
// is a scalar. Aliases are not followed.
func indexScalars(n *yaml.Node, path string, out map[int][]scalarAt) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			if v.Kind == yaml.ScalarNode {
				out[v.Line] = append(out[v.Line], scalarAt{p, v.Value})
				continue
			}
			indexScalars(v, p, out)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				out[c.Line] = append(out[c.Line], scalarAt{path, c.Value})
				continue
			}
			indexScalars(c, path, out)
		}
	}
}

func (s *source) fileName() string {
	if s == nil {
		return ""
	}
	return s.file
}

// errAt builds a ConfigError positioned at the key path.
func (c *Config) errAt(msg string, path ...string) *ConfigError {
	return &ConfigError{File: c.src.fileName(), Line: c.src.line(path...), Key: strings.Join(path, "."), Msg: msg}
}

// paramsYAML re-encodes a job's params node for jobs.Run.Params.
func paramsYAML(n *yaml.Node) ([]byte, error) {
	if n.Kind == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
