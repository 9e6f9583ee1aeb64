package scheduler

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ${VAR} in a configuration file: references are swapped for placeholders
// before parsing and their values put into the parsed scalars after, so no
// value changes the document's structure; a job's params are also kept as
// written, for the catalog's spec.

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

// envValues maps each placeholder of a document to what it stands for.
type envValues map[string]envValue

// envValue is one ${...} of a document (or a $${, or text that looks like a
// placeholder): its value, its text, and the variable if it is not set and
// the reference gives no default.
type envValue struct {
	value, text string
	unset       string
}

// expandEnv replaces ${VAR} and ${VAR:-default}: VAR's value if VAR is set
// and not empty, else the default, else empty; and $${ stands for a
// literal ${. Nothing else containing $ is touched, so passwords and specs
// keep their dollar signs. The references are swapped for placeholders
// before parsing and the values put into the parsed scalars afterwards
// (fillEnv), so a value can never change the document's structure or its
// line numbers (a value with '#', ': ' or a newline stays one value), and
// ${VAR} works unquoted even in flow mappings. A plain (unquoted) scalar is
// typed again after expansion, so db: ${REDIS_DB} decodes as a number.
//
// Text of the document that starts like a placeholder is swapped for one
// too, whose value is that text: fillEnv would otherwise take a word such
// as __slotcron_env_0__ for the first reference's placeholder. Equal
// matches share a placeholder, so an anchor and its alias stay equal.
func expandEnv(data []byte) ([]byte, envValues) {
	refs := envValues{}
	seen := map[string]string{} // match → its placeholder
	out := envRef.ReplaceAllFunc(data, func(m []byte) []byte {
		if ph, ok := seen[string(m)]; ok {
			return []byte(ph)
		}
		r := envValue{value: string(m), text: string(m)}
		switch r.value {
		case "$${":
			r.value = "${"
		case placeholderStem: // stands for itself
		default:
			sub := envRef.FindSubmatch(m)
			env, set := os.LookupEnv(string(sub[1]))
			switch {
			case set && env != "":
				r.value = env
			case !set && sub[2] == nil:
				r.value, r.unset = "", string(sub[1])
			default:
				r.value = string(sub[3])
			}
		}
		ph := placeholder(len(refs))
		refs[ph] = r
		seen[string(m)] = ph
		return []byte(ph)
	})
	return out, refs
}

// fillEnv puts the values of expandEnv into the parsed document, and
// reports each key or value that an unset variable left empty: most likely
// a variable the deployment forgot, which would otherwise be read as "use
// the default" or "off" (an empty http.token disables the API). A
// variable set to the empty string is taken as meant; so is ${VAR:-}.
func (s *source) fillEnv(refs envValues) ConfigErrors {
	if len(refs) == 0 {
		return nil
	}
	var errs ConfigErrors
	fill := func(n *yaml.Node, key string) {
		if n.Kind != yaml.ScalarNode || !placeholderRE.MatchString(n.Value) {
			return
		}
		var unset []string
		written := placeholderRE.ReplaceAllStringFunc(n.Value, func(ph string) string { return refs[ph].text })
		n.Value = placeholderRE.ReplaceAllStringFunc(n.Value, func(ph string) string {
			if v := refs[ph].unset; v != "" && !slices.Contains(unset, v) {
				unset = append(unset, v)
			}
			return refs[ph].value
		})
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			n.Tag = ""
		}
		if n.Value != "" || len(unset) == 0 {
			return
		}
		if key == "" {
			key = written
		}
		errs = append(errs, &ConfigError{File: s.file, Line: n.Line, Key: key, Msg: unsetMessage(unset)})
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				written := placeholderRE.ReplaceAllStringFunc(k.Value, func(ph string) string { return refs[ph].text })
				fill(k, join(path, written))
				walk(v, join(path, k.Value))
			}
		case yaml.ScalarNode:
			fill(n, path)
		default:
			for _, c := range n.Content {
				walk(c, path)
			}
		}
	}
	walk(s.root, "")
	return errs
}

// unsetMessage says that the variables named left a value empty.
func unsetMessage(vars []string) string {
	refs := make([]string, len(vars))
	for i, v := range vars {
		refs[i] = "${" + v + "}"
	}
	what, it := refs[0]+" is", "it"
	if len(refs) > 1 {
		what, it = strings.Join(refs[:len(refs)-1], ", ")+" and "+refs[len(refs)-1]+" are", "them"
	}
	return fmt.Sprintf("empty because %s not set in the environment (set %s, or write ${%s:-} if empty is meant)", what, it, vars[0])
}

// writtenParams is a job's params as the file wrote them, ${VAR}
// references unexpanded, and as the file's job got them, expanded.
type writtenParams struct{ written, expanded []byte }

// paramsWritten returns the params of each job of the document root that
// hold a ${VAR}, as written: read before fillEnv expands them, decoded as
// the jobs are (so merge keys and aliases resolve as for the job's own
// params) and encoded before fillEnv changes the nodes they share. A job
// whose params hold none is left out: its params are as written already.
// parse fills expanded.
func paramsWritten(root *yaml.Node, refs envValues) map[string]writtenParams {
	out := map[string]writtenParams{}
	if len(refs) == 0 || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return out
	}
	top := root.Content[0].Content
	raw := map[string]struct {
		Params yaml.Node `yaml:"params"`
	}{}
	for i := 0; i+1 < len(top); i += 2 {
		if v := top[i+1]; top[i].Value == "jobs" && v.Kind == yaml.MappingNode {
			// In slices, as decodeConfig does: go-yaml's check for
			// duplicate keys is quadratic in a mapping's size.
			decode := func() error { _, err := decodeEntries(v, &raw); return err }
			if hasMergeKey(v) {
				decode = func() error { return v.Decode(&raw) }
			}
			if decode() != nil {
				return out
			}
		}
	}
	value := func(ph string) string { return refs[ph].value }
	written := func(ph string) string { return refs[ph].text }
	for name, jc := range raw {
		if text, err := paramsYAML(&jc.Params); err == nil && placeholderRE.Match(text) {
			out[placeholderRE.ReplaceAllStringFunc(name, value)] = writtenParams{
				written: []byte(placeholderRE.ReplaceAllStringFunc(string(text), written))}
		}
	}
	return out
}
