package scheduler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
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
// from the environment, and decodes it. Unknown keys, values of the wrong
// type, a second YAML document and a value left empty by an unset ${VAR}
// are reported together, each with file, line and key, as ConfigErrors.
// Load does not check what needs the job registry; New and Validate do.
func Load(path string) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readFile reads the configuration file at path; a file it cannot read is
// a ConfigError naming it once.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		return data, nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // it names the file again
	}
	msg := "cannot read the configuration file: " + err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		msg = "no such configuration file"
	}
	return nil, &ConfigError{File: path, Msg: msg}
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
	data, err := readFile(path)
	if err != nil {
		return nil, err
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
func parse(name string, written []byte) (*Config, ConfigErrors) {
	data, refs := expandEnv(written)
	root, errs := readDocument(name, data, written)
	if root == nil {
		return nil, errs
	}
	src := &source{file: name, root: root, paramsWritten: paramsWritten(root, refs)}
	errs = append(errs, src.fillEnv(refs)...)
	cfg := &Config{src: src}
	if len(root.Content) == 0 {
		sortErrors(errs)
		return cfg, errs
	}
	checkKeys(src, root.Content[0], reflect.TypeOf(Config{}), "", &errs)
	errs = append(errs, src.zeroDurations()...)
	msgs, err := decodeConfig(root.Content[0], cfg)
	if err != nil {
		return nil, ConfigErrors{syntaxError(name, data, written, err)}
	}
	for _, msg := range msgs {
		errs = append(errs, src.typeError(msg))
	}
	for name, w := range src.paramsWritten {
		jc := cfg.Jobs[name]
		w.expanded, _ = paramsYAML(&jc.Params)
		src.paramsWritten[name] = w
	}
	sortErrors(errs)
	return cfg, errs
}

// readDocument parses data (written, its ${VAR}s expanded), which must
// hold one YAML document: a second one is an error at its first line (an
// empty one, such as a closing "---", is not). root is nil when data is not
// YAML; an empty file is a root with no content.
func readDocument(name string, data, written []byte) (*yaml.Node, ConfigErrors) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, ConfigErrors{syntaxError(name, data, written, err)}
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return &root, nil
		case err == nil && emptyDocument(&next):
			continue
		}
		line := next.Line
		if err != nil {
			// No node to ask: the document marker after the first
			// document's content, else where go-yaml saw the problem.
			line = markerAfter(data, &root)
			if line == 0 {
				line = syntaxError(name, data, written, err).Line
			}
		}
		return &root, ConfigErrors{{File: name, Line: line,
			Msg: "a second YAML document starts here: a configuration file holds one (remove the --- and what follows, or merge it into the first)"}}
	}
}

// emptyDocument reports whether doc holds nothing: a bare "---".
func emptyDocument(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return len(doc.Content) == 1 && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == "" && n.Anchor == ""
}

// docMarker matches a line that starts or ends a YAML document.
var docMarker = regexp.MustCompile(`^(---|\.\.\.)([ \t].*)?$`)

// markerAfter returns the line of the first document marker after the
// first line of root's content, or 0.
func markerAfter(data []byte, root *yaml.Node) int {
	from := 1
	if len(root.Content) > 0 {
		from = root.Content[0].Line
	}
	ends := lineEnds(data)
	for n := from + 1; n <= len(ends); n++ {
		if docMarker.MatchString(lineText(data, ends, n)) {
			return n
		}
	}
	return 0
}

func sortErrors(errs ConfigErrors) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
}

// source remembers the parsed document so validation can name lines.
type source struct {
	file string
	root *yaml.Node
	// paramsWritten holds each job's params as the file wrote them, ${VAR}
	// references unexpanded (engine.JobSpec.ParamsWritten).
	paramsWritten map[string]writtenParams

	mu sync.Mutex
	// keys indexes the big mappings line has searched: key → the index in
	// Content of its first occurrence. Without it, an error for each of n
	// jobs costs n²/2 key comparisons.
	keys map[*yaml.Node]map[string]int
	// typed indexes the document's keys and values by line, each with
	// the type it decodes into, to name the key of an error; built at
	// the first error that needs it.
	typed map[int][]typedEntry
}

// indexFrom is the size from which line indexes a mapping's keys.
const indexFrom = 16

// line returns the line of the deepest key of path present in the document
// (the key's own line), or 0.
func (s *source) line(path ...string) int {
	line, _ := s.lookup(path...)
	return line
}

// lookup returns the line of the deepest key of path present in the
// document, and the value at path; nil when path is not all there. In a
// sequence, a key is an item's index, and its line the item's.
func (s *source) lookup(path ...string) (int, *yaml.Node) {
	if s == nil || len(s.root.Content) == 0 {
		return 0, nil
	}
	n, line := s.root.Content[0], 0
	for _, key := range path {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n.Kind == yaml.SequenceNode {
			// A key of a sequence is an item's index: "0", "1"...
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line, nil
			}
			line, n = n.Content[i].Line, n.Content[i]
			continue
		}
		if n.Kind != yaml.MappingNode {
			return line, nil
		}
		i, found := s.find(n, key)
		if !found {
			return line, nil
		}
		line, n = n.Content[i].Line, n.Content[i+1]
	}
	return line, n
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

// keyAt names the key of a type error: go-yaml says only the line, and the
// message quotes the offending value (`value`, or "value" from Duration's
// and redisstore.TLSOptions' own errors). It is the one entry on that line
// whose scalar value the message quotes; "" if none or several are.
func (s *source) keyAt(line int, msg string) string {
	key := ""
	for _, e := range s.entriesAt(line) {
		if e.isKey || e.node.Kind != yaml.ScalarNode {
			continue
		}
		short := e.node.Value
		if len(short) > 10 {
			short = short[:7] + "..."
		}
		if strings.Contains(msg, strconv.Quote(e.node.Value)) || strings.Contains(msg, "`"+short+"`") {
			if key != "" && key != e.path {
				return ""
			}
			key = e.path
		}
	}
	return key
}

// written returns job's params as the file wrote them, given params, the
// job's params now; nil for none, for a configuration not read from a
// file, or for params changed since it was read (by a program, through
// Config.Jobs).
func (s *source) written(job string, params []byte) []byte {
	if s == nil {
		return nil
	}
	w, ok := s.paramsWritten[job]
	if !ok || !bytes.Equal(w.expanded, params) {
		return nil
	}
	return w.written
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

// paramsYAML re-encodes a job's params node for jobs.Run.Params, its
// aliases replaced by what they stand for (encoded alone, an alias would be
// the text *name).
func paramsYAML(n *yaml.Node) ([]byte, error) {
	if n.Kind == 0 {
		return nil, nil
	}
	n = unalias(n, 0)
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

// unalias returns n, or a copy of it whose aliases are replaced by copies
// of their anchors' nodes (without the anchor), to a depth of 100.
func unalias(n *yaml.Node, depth int) *yaml.Node {
	if depth > 100 {
		return n
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		c := *n.Alias
		c.Anchor = ""
		n = &c
	}
	var kids []*yaml.Node
	for i, k := range n.Content {
		u := unalias(k, depth+1)
		if u != k && kids == nil {
			kids = append([]*yaml.Node(nil), n.Content...)
		}
		if kids != nil {
			kids[i] = u
		}
	}
	if kids == nil {
		return n
	}
	c := *n
	c.Content = kids
	return &c
}
