package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ConfigError is one problem found in a configuration, with its position.
type ConfigError struct {
	File string // empty for a Config built in code
	Line int    // 1-based; 0 when unknown
	Key  string // dotted path such as jobs.invoices.schedule
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors is every problem found in one configuration, in file order.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem, so errors.As finds a *ConfigError in them.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// IsConfigError reports whether err is a configuration problem (exit code 2)
// rather than a runtime failure.
func IsConfigError(err error) bool {
	var one *ConfigError
	var many ConfigErrors
	return errors.As(err, &many) || errors.As(err, &one)
}

// Messages from go-yaml name YAML tags (!!seq) and Go types (int,
// scheduler.RetryPolicy); a person wrote neither. The functions below put
// go-yaml's errors into the file's own words: the key, what it wants, what
// it found.

// goYAMLType is go-yaml's type error: the line, the tag of what it found
// (!!seq, or one the file wrote), that value (shortened) if a scalar, and
// the Go type it wanted.
var goYAMLType = regexp.MustCompile("(?s)^line ([0-9]+): cannot unmarshal (!\\S*)(?: `(.*)`)? into ([^ ]+)$")

// goYAMLDup is go-yaml's error for a key set twice in one mapping.
var goYAMLDup = regexp.MustCompile(`(?s)^line ([0-9]+): mapping key "(.*)" already defined at line ([0-9]+)$`)

// lineRE splits "line N: message", with or without go-yaml's prefix.
var lineRE = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)

// typeError turns one of go-yaml's type errors (or a message of the same
// shape from an UnmarshalYAML of ours) into a ConfigError naming its key.
func (s *source) typeError(msg string) *ConfigError {
	if m := goYAMLType.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return s.wrongKind(line, m[2], m[3], m[4])
	}
	if m := goYAMLDup.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{File: s.file, Line: line, Key: s.keyNamed(line, m[2]),
			Msg: fmt.Sprintf("set twice in one mapping: first at line %s", m[3])}
	}
	e := &ConfigError{File: s.file, Msg: msg}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
	}
	e.Key = s.keyAt(e.Line, e.Msg)
	if e.Key == "" {
		if t, ok := s.onlyEntry(e.Line); ok {
			e.Key = t.path
			if !t.isKey && t.node.Kind != yaml.ScalarNode {
				// An UnmarshalYAML that quoted the value of a list or
				// mapping quoted nothing.
				e.Msg = strings.ReplaceAll(e.Msg, `not ""`, "not "+foundWord(t.node.ShortTag(), "", t.node))
			}
		}
	}
	e.Msg = plainTags(e.Msg)
	return e
}

// wrongKind says what a key wants and what it found instead, as go-yaml
// reported it at line: tag and short describe the value, goType what the
// key wants.
func (s *source) wrongKind(line int, tag, short, goType string) *ConfigError {
	e := &ConfigError{File: s.file, Line: line}
	want := configTypes()[goType]
	var node *yaml.Node
	t, found := s.entryOfKind(line, tag, goType)
	if found {
		e.Key, want, node = t.path, t.typ, t.node
	} else {
		e.Key = s.keyAt(line, "`"+short+"`")
		if e.Key == "" {
			if t, ok := s.onlyEntry(line); ok {
				e.Key = t.path
			}
		}
	}
	got := foundWord(tag, short, node)
	switch {
	case found && t.isKey:
		e.Msg = "a key must be a single value, not " + got
	case want == reflect.TypeFor[Config]():
		e.Msg = "the file must be a mapping of settings (store:, defaults:, jobs:, ...), not " + got
	case want == reflect.TypeFor[JobConfig]() && node != nil && node.Kind == yaml.ScalarNode:
		e.Msg = fmt.Sprintf("want the job's settings, such as {schedule: %q}, not %s", node.Value, got)
	case want == nil:
		e.Msg = "want another kind of value, not " + got
	default:
		e.Msg = "want " + describe(want) + ", not " + got
		if isInt(want) && (tag == "!!int" || tag == "!!float") && wholeNumber.MatchString(valueOf(short, node)) {
			e.Msg += " (too big)"
		}
	}
	return e
}

var wholeNumber = regexp.MustCompile(`^[-+]?[0-9_]+$`)

func valueOf(short string, n *yaml.Node) string {
	if n != nil {
		return n.Value
	}
	return short
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// describe says in words what a value of type t is written as.
func describe(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration](), reflect.TypeFor[time.Duration]():
		return "a duration such as 15s"
	case reflect.TypeFor[JobConfig]():
		return `the job's settings, such as {schedule: "@hourly"}`
	}
	switch t.Kind() {
	case reflect.String:
		return "a single value"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a mapping"
	case reflect.Struct:
		return "a mapping of settings"
	}
	return "another kind of value"
}

// foundWord says what a value with YAML tag tag is: a list, a mapping, or
// the quoted scalar (n's whole value if known, else go-yaml's short one).
func foundWord(tag, short string, n *yaml.Node) string {
	switch tag {
	case "!!seq":
		return "a list"
	case "!!map":
		return "a mapping"
	case "!!null":
		return "nothing"
	}
	return strconv.Quote(valueOf(short, n))
}

// yamlTag matches what remains of YAML's tags in a message.
var yamlTag = regexp.MustCompile(`!!(str|int|float|bool|null|seq|map|binary|timestamp|merge)\b`)

// plainTags words any YAML tag left in msg.
func plainTags(msg string) string {
	return yamlTag.ReplaceAllStringFunc(msg, func(tag string) string {
		return map[string]string{
			"!!str": "text", "!!int": "a whole number", "!!float": "a number", "!!bool": "true or false",
			"!!null": "nothing", "!!seq": "a list", "!!map": "a mapping", "!!binary": "binary data",
			"!!timestamp": "a timestamp", "!!merge": "a merge key",
		}[tag]
	})
}

// configTypes maps the name go-yaml gives each type reachable from Config
// (reflect's String) to the type.
var configTypes = sync.OnceValue(func() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if _, seen := out[t.String()]; seen {
			return
		}
		out[t.String()] = t
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
		case reflect.Map:
			walk(t.Key())
			walk(t.Elem())
		case reflect.Struct:
			for _, ft := range yamlFields(t) {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	walk(reflect.TypeFor[time.Duration]())
	return out
})

// syntaxError is a ConfigError for a document go-yaml could not read: data,
// which is written with its ${VAR}s expanded (on the same lines). Its line
// is found again (go-yaml often names the line where the enclosing mapping
// began, or none on the first line) as the first line from which data's
// prefix fails the same way, and its key is guessed from the indentation
// of the lines above, as written.
func syntaxError(file string, data, written []byte, err error) *ConfigError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	ends := lineEnds(data)
	if l := firstFailingLine(data, ends, msg); l > 0 {
		line = l
	} else if line == 0 && len(data) > 0 {
		line = 1 // go-yaml omits line 1
	}
	ends = lineEnds(written)
	text := lineText(written, ends, line)
	return &ConfigError{File: file, Line: line, Key: keyOfLine(written, ends, line), Msg: plainSyntax(msg, text)}
}

// maxBisect bounds the documents whose syntax errors are placed again:
// placing one parses the document's prefixes, log2(lines) times.
const maxBisect = 8 << 20

// firstFailingLine returns the first line n such that lines 1..n fail to
// parse with msg; 0 if none does or the document is too big to search.
func firstFailingLine(data []byte, ends []int, msg string) int {
	if len(data) > maxBisect || len(ends) == 0 {
		return 0
	}
	fails := func(n int) bool {
		var node yaml.Node
		err := yaml.NewDecoder(bytes.NewReader(data[:ends[n-1]])).Decode(&node)
		if err == nil {
			return false
		}
		m := strings.TrimPrefix(err.Error(), "yaml: ")
		if sub := lineRE.FindStringSubmatch(m); sub != nil {
			m = sub[2]
		}
		return m == msg
	}
	if !fails(len(ends)) {
		return 0
	}
	lo, hi := 1, len(ends) // fails(hi)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// lineEnds returns the offset after each line of data, its line break
// included, as YAML counts lines: LF, CR, CRLF, NEL, LS and PS end one.
// The last line need not end with a break.
func lineEnds(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == '\r' && i+1 < len(data) && data[i+1] == '\n':
			size = 2
			fallthrough
		case r == '\n', r == '\r', r == 0x85, r == 0x2028, r == 0x2029:
			ends = append(ends, i+size)
		}
		i += size
	}
	if len(ends) == 0 || ends[len(ends)-1] < len(data) {
		ends = append(ends, len(data))
	}
	return ends
}

// lineText is line n of data (1-based) without its break; "" if none.
func lineText(data []byte, ends []int, n int) string {
	if n < 1 || n > len(ends) {
		return ""
	}
	start := 0
	if n > 1 {
		start = ends[n-2]
	}
	return strings.TrimRight(string(data[start:ends[n-1]]), "\r\n\u0085\u2028\u2029")
}

// keyLine matches a line that starts a block mapping entry: its
// indentation and key.
var keyLine = regexp.MustCompile(`^([ \t]*)(?:-[ \t]+)*(?:"([^"]*)"|'([^']*)'|([^\s:#{}\[\],"'&*!|>%@` + "`" + `-][^:#{}\[\]]*?|-[^\s:#{}\[\]]+?))[ \t]*:(?:[ \t]|$)`)

// keyOfLine guesses the dotted key of line n of a document that could not
// be parsed: the key it starts, under the keys of the less indented lines
// above it. A tab counts to the next multiple of eight columns.
func keyOfLine(data []byte, ends []int, n int) string {
	indent := func(s string) int {
		col := 0
		for _, c := range s {
			switch c {
			case ' ':
				col++
			case '\t':
				col += 8 - col%8
			default:
				return col
			}
		}
		return col
	}
	key := func(s string) (string, bool) {
		m := keyLine.FindStringSubmatch(s)
		if m == nil {
			return "", false
		}
		return m[2] + m[3] + strings.TrimSpace(m[4]), true
	}
	// opens reports whether the key on s may hold the lines below it: it
	// has no value on its own line but a comment, an anchor, a tag or a
	// block scalar's indicator.
	opens := func(s string) bool {
		m := keyLine.FindStringIndex(s)
		rest := strings.TrimSpace(s[m[1]:])
		return rest == "" || strings.ContainsRune("#&!|>", rune(rest[0]))
	}
	text := lineText(data, ends, n)
	var path []string
	at := indent(text)
	if k, ok := key(text); ok {
		path = append(path, k)
	} else if strings.TrimSpace(text) == "" {
		at = 1 << 30
	}
	for i := n - 1; i >= 1 && at > 0; i-- {
		s := lineText(data, ends, i)
		if t := strings.TrimSpace(s); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if in := indent(s); in < at {
			k, ok := key(s)
			if ok && !opens(s) {
				continue // a key: value holds nothing below it
			}
			if ok {
				path = append(path, k)
			}
			at = in
		}
	}
	slices.Reverse(path)
	return strings.Join(path, ".")
}

// plainSyntax words go-yaml's syntax error msg about the line text.
func plainSyntax(msg, text string) string {
	lead := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	_, value, _ := strings.Cut(strings.TrimLeft(text, " \t-"), ": ")
	value = strings.TrimLeft(value, " ")
	switch {
	case strings.Contains(lead, "\t"):
		return "a tab in the indentation: YAML indents with spaces only"
	case strings.Contains(msg, "tab character"), msg == "found character that cannot start any token" && strings.Contains(text, "\t"):
		return "a tab where YAML allows only spaces"
	case strings.HasPrefix(value, "@") || strings.HasPrefix(value, "`"):
		return fmt.Sprintf("a value starting with %c must be quoted, such as %q", value[0], strings.TrimSpace(value))
	case strings.HasPrefix(value, "*") && strings.Contains(msg, "alphabetic or numeric"):
		return fmt.Sprintf("a value starting with * must be quoted, such as %q (*name is an alias)", strings.TrimSpace(value))
	case msg == "mapping values are not allowed in this context":
		return `": " inside a plain value: quote the value, or check the indentation`
	case msg == "found unknown escape character":
		return `unknown escape in a double-quoted value: write \\ for a backslash, or use single quotes`
	case strings.HasPrefix(msg, "unknown anchor "):
		name := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor "), " referenced"), "'")
		return fmt.Sprintf("alias *%s names no anchor &%s defined before it", name, name)
	}
	return "syntax error: " + plainTags(msg)
}
